//! A redeem request, validated once: [`ParsedRedeem`].
//!
//! The HTTP adapter parses a redeem body into it at the edge; the service
//! and the engine then read its typed values and never check the request
//! again (the NUL character is looked for once, here, in every field).

use serde::Serialize;
use serde_json::{Map, Value};

use super::request::{check_request, RequestView};
use crate::core::campaign::codes::lookup_code;
use crate::core::campaign::{Cart, RedeemRequest};
use crate::core::error::{ErrorCode, Problems};
use crate::core::limits::{MAX_ACTION_REFS, MAX_REF_CODE_LEN};
use crate::core::wire::{find_nul, Scalar};
use crate::{Error, FieldError, Result};

/// A redeem request that passed every check of the request alone: a
/// campaign code, an idempotency key of 1 to [`MAX_REF_CODE_LEN`] bytes if
/// any, at most [`MAX_ACTION_REFS`] campaigns in `withCampaigns`, the
/// request limits of [`crate::core::limits`], exact numbers, and no NUL
/// character anywhere. It borrows the request: nothing is copied.
#[derive(Debug, Clone, Copy)]
pub struct ParsedRedeem<'r> {
    request: &'r RedeemRequest,
}

impl<'r> ParsedRedeem<'r> {
    /// Checks `request`; the first failing check is the error (NUL text,
    /// then the campaign code, the idempotency key, `withCampaigns`, the
    /// request limits).
    pub fn parse(request: &'r RedeemRequest) -> Result<Self> {
        // Everything of the request may end up stored: refuse NUL first.
        let mut problems = Problems::new();
        nul_problems(request, &mut problems);
        problems.into_result()?;
        if let Some(code) = &request.code {
            lookup_code("code", code).map_err(|e| Error::validation(vec![e]))?;
        }
        if request.campaign_code.trim().is_empty() && request.code.is_none() {
            return Err(Error::validation(vec![FieldError::new(
                "campaignCode",
                ErrorCode::Required,
                "campaignCode is required (or a code of a campaign's code pool)",
            )]));
        }
        if let Some(key) = &request.idempotency_key {
            if key.is_empty() || key.len() > MAX_REF_CODE_LEN {
                return Err(Error::invalid_field(
                    "idempotencyKey",
                    ErrorCode::InvalidIdempotencyKey,
                    format!("an idempotency key has 1 to {MAX_REF_CODE_LEN} bytes"),
                ));
            }
        }
        if request.with_campaigns.len() > MAX_ACTION_REFS {
            let message = format!("withCampaigns names more than {MAX_ACTION_REFS} campaigns");
            return Err(
                Error::new(ErrorCode::RequestTooLarge, message.clone()).with_fields(vec![
                    FieldError::new("withCampaigns", ErrorCode::TooMany, message),
                ]),
            );
        }
        check_request(RequestView::from(request), false)?;
        Ok(ParsedRedeem { request })
    }

    /// The request.
    pub fn request(&self) -> &'r RedeemRequest {
        self.request
    }

    /// The campaign's reference code.
    pub fn campaign_code(&self) -> &'r str {
        &self.request.campaign_code
    }

    /// The normalized code of the campaign's code pool, if the request
    /// carries one (checked by [`parse`](Self::parse)).
    pub fn code(&self) -> Option<String> {
        let code = self.request.code.as_deref()?;
        lookup_code("code", code).ok()
    }

    /// The idempotency key, if any.
    pub fn idempotency_key(&self) -> Option<&'r str> {
        self.request.idempotency_key.as_deref()
    }

    /// The reference codes of the other campaigns applied to the same order.
    pub fn with_campaigns(&self) -> &'r [String] {
        &self.request.with_campaigns
    }

    pub(crate) fn view(self) -> RequestView<'r> {
        RequestView::from(self.request)
    }

    /// A fingerprint of the request: the SHA-256 of its JSON form with the
    /// idempotency key left out (fields in declaration order, attribute
    /// names sorted, numbers as sent). A replay of an idempotency key must
    /// carry the same.
    pub fn fingerprint(&self) -> String {
        /// [`RedeemRequest`] as it serializes, borrowed, without its key.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Form<'a> {
            campaign_code: &'a str,
            action_refs: &'a Option<Vec<String>>,
            channel: &'a Option<String>,
            attribute: &'a Map<String, Value>,
            cart: &'a Cart,
            idempotency_key: Option<()>,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            with_campaigns: &'a [String],
            #[serde(skip_serializing_if = "Option::is_none")]
            code: &'a Option<String>,
        }
        let r = self.request;
        let json = serde_json::to_vec(&Form {
            campaign_code: &r.campaign_code,
            action_refs: &r.action_refs,
            channel: &r.channel,
            attribute: &r.attribute,
            cart: &r.cart,
            idempotency_key: None,
            with_campaigns: &r.with_campaigns,
            code: &r.code,
        })
        .unwrap_or_default();
        crate::core::hash::sha256_hex(&json)
    }
}

/// Every text of `r` holding the NUL character, at its path, in the order
/// of a walk of its JSON form (keys sorted).
fn nul_problems(r: &RedeemRequest, problems: &mut Problems) {
    fn text(problems: &mut Problems, path: &dyn Fn() -> String, s: &str) {
        if s.contains('\0') {
            problems.push(
                path(),
                ErrorCode::InvalidText,
                "text must not contain the NUL character (U+0000)",
            );
        }
    }
    fn scalar(problems: &mut Problems, path: &dyn Fn() -> String, s: Option<&Scalar>) {
        if let Some(Scalar::Text(t)) = s {
            text(problems, path, t);
        }
    }
    fn texts(problems: &mut Problems, path: &str, xs: &[String]) {
        for (i, x) in xs.iter().enumerate() {
            text(problems, &|| format!("{path}[{i}]"), x);
        }
    }
    // The order of the JSON form's sorted keys, at every level.
    if let Some(refs) = &r.action_refs {
        texts(problems, "actionRefs", refs);
    }
    for (name, value) in &r.attribute {
        if !name.contains('\0') && !crate::core::wire::contains_nul(value) {
            continue;
        }
        let path = format!("attribute.{name}");
        if name.contains('\0') {
            problems.push(
                path.clone(),
                ErrorCode::InvalidText,
                "names must not contain the NUL character (U+0000)",
            );
        }
        find_nul(value, &path, problems);
    }
    text(problems, &|| "campaignCode".to_owned(), &r.campaign_code);
    let cart = &r.cart;
    scalar(
        problems,
        &|| "cart.currency".to_owned(),
        cart.currency.as_ref(),
    );
    for (i, item) in cart.items.iter().enumerate() {
        scalar(
            problems,
            &|| format!("cart.items[{i}].amount"),
            item.amount.as_ref(),
        );
        if let Some(name) = &item.name {
            text(problems, &|| format!("cart.items[{i}].name"), name);
        }
        scalar(
            problems,
            &|| format!("cart.items[{i}].price"),
            item.price.as_ref(),
        );
        scalar(
            problems,
            &|| format!("cart.items[{i}].sku"),
            item.sku.as_ref(),
        );
        texts(problems, &format!("cart.items[{i}].tags"), &item.tags);
    }
    scalar(
        problems,
        &|| "cart.totalPrice".to_owned(),
        cart.total_price.as_ref(),
    );
    if let Some(channel) = &r.channel {
        text(problems, &|| "channel".to_owned(), channel);
    }
    if let Some(key) = &r.idempotency_key {
        text(problems, &|| "idempotencyKey".to_owned(), key);
    }
    texts(problems, "withCampaigns", &r.with_campaigns);
}

#[cfg(test)]
// Test code: a failed unwrap is a failed test.
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(body: Value) -> RedeemRequest {
        serde_json::from_value(body).unwrap()
    }

    /// The fingerprint is the one stored with earlier redemptions: the
    /// JSON of the whole request with its key set to `null`.
    #[test]
    fn fingerprint_is_the_request_json_without_its_key() {
        for body in [
            json!({"campaignCode": "A", "idempotencyKey": "k", "attribute": {"b": 1.50, "a": ["x", 2]},
                   "cart": {"totalPrice": "10.0", "items": [{"sku": 7, "tags": ["t"]}]},
                   "actionRefs": ["r"], "channel": "web", "withCampaigns": ["B"]}),
            json!({"campaignCode": "A"}),
        ] {
            let r = request(body);
            let mut normal = r.clone();
            normal.idempotency_key = None;
            let want = crate::core::hash::sha256_hex(&serde_json::to_vec(&normal).unwrap());
            assert_eq!(ParsedRedeem::parse(&r).unwrap().fingerprint(), want);
        }
    }

    /// NUL is reported at the same paths, in the same order, as a walk of
    /// the request's JSON form.
    #[test]
    fn nul_is_found_in_every_field_at_its_json_path() {
        let r = request(json!({
            "campaignCode": "A\u{0}", "actionRefs": ["ok", "b\u{0}"], "channel": "\u{0}",
            "attribute": {"n\u{0}": "v", "o": {"p": ["\u{0}"]}},
            "cart": {"totalPrice": "\u{0}", "currency": "\u{0}",
                     "items": [{"name": "\u{0}", "sku": "\u{0}", "amount": "\u{0}", "price": "\u{0}",
                                "tags": ["t", "\u{0}"]}]},
            "idempotencyKey": "\u{0}", "withCampaigns": ["\u{0}"]
        }));
        let mut walked = Problems::new();
        find_nul(&serde_json::to_value(&r).unwrap(), "", &mut walked);
        let mut ours = Problems::new();
        nul_problems(&r, &mut ours);
        let fields = |p: Problems| -> Vec<String> {
            p.into_result()
                .unwrap_err()
                .fields()
                .iter()
                .map(|f| f.field.clone())
                .collect()
        };
        assert_eq!(fields(ours), fields(walked));
    }
}
