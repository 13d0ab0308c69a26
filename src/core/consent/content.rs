//! Content-store types: the content types, versioned records and the wire
//! envelopes (`cms` responses).
//!
//! A content record is identified by (project, type, id) and is **never
//! overwritten**: every create or replace appends a new [`ContentRecord`]
//! version (1, 2, …); the latest one is "the" record, the older ones stay
//! readable through `versions`. Each version carries the store-assigned
//! [`seq`](ContentRecord::seq), the total order of everything the consent
//! store ever recorded (content versions and purpose events share it).

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{Error, Result};

/// A content type of the content store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContentType {
    /// `svc-privacy-notice-v1`
    PrivacyNotice,
    /// `svc-consent-v1`
    Consent,
    /// `svc-consent-acceptance-v1`
    ConsentAcceptance,
    /// `svc-purpose-v1`: the purpose catalogue (`code`, `nameEn`, `nameTh`).
    Purpose,
}

impl ContentType {
    /// Every content type.
    pub const ALL: [ContentType; 4] = [
        ContentType::PrivacyNotice,
        ContentType::Consent,
        ContentType::ConsentAcceptance,
        ContentType::Purpose,
    ];

    /// The wire name (`svc-consent-v1`), also the `alias` and `id` of the
    /// envelope's `contentType`.
    pub fn as_str(self) -> &'static str {
        match self {
            ContentType::PrivacyNotice => "svc-privacy-notice-v1",
            ContentType::Consent => "svc-consent-v1",
            ContentType::ConsentAcceptance => "svc-consent-acceptance-v1",
            ContentType::Purpose => "svc-purpose-v1",
        }
    }

    /// The human name, the envelope's `contentType.name`.
    pub fn display_name(self) -> &'static str {
        match self {
            ContentType::PrivacyNotice => "Privacy Notice",
            ContentType::Consent => "Consent",
            ContentType::ConsentAcceptance => "Consent Acceptance",
            ContentType::Purpose => "Purpose",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        ContentType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Parses the `{type}` of a content-store path: an unknown name is
    /// [`NotFound`](crate::ErrorKind::NotFound) `content_type_not_found`.
    pub fn from_path(s: &str) -> Result<Self> {
        ContentType::parse(s).ok_or_else(|| {
            Error::not_found(
                "content_type_not_found",
                format!("there is no content type {s:?}"),
            )
        })
    }

    /// The envelope's `contentType` object.
    pub fn reference(self) -> ContentTypeRef {
        ContentTypeRef {
            id: self.as_str().to_owned(),
            name: self.display_name().to_owned(),
            alias: self.as_str().to_owned(),
            search_engine: None,
        }
    }
}

impl fmt::Display for ContentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ContentType {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ContentType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        ContentType::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format_args!("unknown content type {s:?}")))
    }
}

/// The envelope's `contentType` object: `id`, `name`, `alias`,
/// `searchEngine` (always `null`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ContentTypeRef {
    /// The type's wire name.
    pub id: String,
    /// The type's human name.
    pub name: String,
    /// The type's wire name.
    pub alias: String,
    /// Always `null`: there is no external search engine.
    pub search_engine: Option<String>,
}

/// The reduced `contentType` of the acceptance-update response: `id`,
/// `name`, `alias`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct ContentTypeInfo {
    /// The type's wire name.
    pub id: String,
    /// The type's human name.
    pub name: String,
    /// The type's wire name.
    pub alias: String,
}

/// One stored version of a content record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentRecord {
    /// Content id (a UUID chosen by the service).
    pub id: String,
    /// Project.
    pub project_id: String,
    /// Content type.
    pub content_type: ContentType,
    /// 1 on creation, +1 on every replace.
    pub version: i64,
    /// Store-assigned position in the store's single append order (content
    /// versions and purpose events share it): strictly increasing, so two
    /// writes recorded in the same microsecond still have an order.
    pub seq: i64,
    /// `sub` of the creator (of version 1).
    pub created_by: String,
    /// `sub` of the author of this version.
    pub last_modified_by: String,
    /// When version 1 was recorded.
    pub created_date: DateTime<Utc>,
    /// When this version was recorded.
    pub last_modified_date: DateTime<Utc>,
    /// The attributes, validated and normalised (see [`format_time`]).
    pub data: Map<String, Value>,
}

impl ContentRecord {
    /// The `cms` response envelope.
    pub fn envelope(&self) -> Envelope {
        Envelope {
            id: self.id.clone(),
            created_by: self.created_by.clone(),
            last_modified_by: self.last_modified_by.clone(),
            created_date: self.created_date,
            last_modified_date: self.last_modified_date,
            content_type: self.content_type.reference(),
            project_id: self.project_id.clone(),
            data: self.data.clone(),
        }
    }

    /// The reduced envelope of the acceptance-update response (endpoint 14).
    pub fn reduced_envelope(&self) -> ReducedEnvelope {
        let t = self.content_type;
        ReducedEnvelope {
            id: self.id.clone(),
            content_type: ContentTypeInfo {
                id: t.as_str().to_owned(),
                name: t.display_name().to_owned(),
                alias: t.as_str().to_owned(),
            },
            project_id: self.project_id.clone(),
            data: self.data.clone(),
        }
    }

    /// The text of a string attribute.
    pub fn str(&self, attribute: &str) -> Option<&str> {
        get_str(&self.data, attribute)
    }
}

/// What a create or replace writes; the store turns it into a
/// [`ContentRecord`] (version, `seq`, created/modified fields).
#[derive(Debug, Clone, PartialEq)]
pub struct ContentWrite {
    /// Project.
    pub project_id: String,
    /// Content type.
    pub content_type: ContentType,
    /// Content id.
    pub id: String,
    /// The complete, validated `data` of the new version.
    pub data: Map<String, Value>,
    /// `sub` of the author.
    pub actor: String,
    /// When the write happens (the service's clock).
    pub at: DateTime<Utc>,
}

/// A content-store response: `id`, `createdBy`, `lastModifiedBy`,
/// `createdDate`, `lastModifiedDate`, `contentType`, `projectId`, `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Content id.
    pub id: String,
    /// `sub` of the creator.
    pub created_by: String,
    /// `sub` of the last editor.
    pub last_modified_by: String,
    /// Creation time (UTC, `Z`).
    pub created_date: DateTime<Utc>,
    /// Last modification time (UTC, `Z`).
    pub last_modified_date: DateTime<Utc>,
    /// The content type.
    pub content_type: ContentTypeRef,
    /// Project.
    pub project_id: String,
    /// The attributes.
    pub data: Map<String, Value>,
}

/// The response of the acceptance update (endpoint 14): `id`,
/// `contentType` (`id`, `name`, `alias`), `projectId`, `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReducedEnvelope {
    /// Content id.
    pub id: String,
    /// The content type.
    pub content_type: ContentTypeInfo,
    /// Project.
    pub project_id: String,
    /// The attributes.
    pub data: Map<String, Value>,
}

/// How timestamps are written inside content `data`: UTC, always six
/// fraction digits, `Z` (`2026-01-01T00:00:00.000000Z`).
///
/// A fixed width makes the text order the time order, so sorting and exact
/// filters on timestamp attributes behave the same on every store without
/// any date parsing in SQL. (Typed responses outside `data` use chrono's
/// form, which drops a zero fraction.)
pub fn format_time(t: DateTime<Utc>) -> String {
    crate::core::clock::truncate_micros(t).to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Parses an RFC 3339 timestamp with any offset.
pub(crate) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| crate::core::clock::truncate_micros(t.with_timezone(&Utc)))
}

/// A string attribute.
pub(crate) fn get_str<'a>(data: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    data.get(key).and_then(Value::as_str)
}

/// A non-empty string attribute, owned.
pub(crate) fn get_string(data: &Map<String, Value>, key: &str) -> Option<String> {
    get_str(data, key)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// An integer attribute.
pub(crate) fn get_i64(data: &Map<String, Value>, key: &str) -> Option<i64> {
    data.get(key).and_then(Value::as_i64)
}

/// A timestamp attribute (`""` and `null` are none).
pub(crate) fn get_time(data: &Map<String, Value>, key: &str) -> Option<DateTime<Utc>> {
    get_str(data, key).and_then(parse_time)
}

/// A string-array attribute (non-string elements are skipped).
pub(crate) fn get_strings(data: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    data.get(key).and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn record() -> ContentRecord {
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 8, 30, 0).unwrap();
        ContentRecord {
            id: "c1".into(),
            project_id: "p1".into(),
            content_type: ContentType::ConsentAcceptance,
            version: 2,
            seq: 7,
            created_by: "alice".into(),
            last_modified_by: "bob".into(),
            created_date: t,
            last_modified_date: t + chrono::Duration::milliseconds(1500),
            data: serde_json::from_str(r#"{"status":"WITHDRAWN","note":""}"#).unwrap(),
        }
    }

    #[test]
    fn envelope_has_exactly_the_spec_fields() {
        let v = serde_json::to_value(record().envelope()).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "contentType",
                "createdBy",
                "createdDate",
                "data",
                "id",
                "lastModifiedBy",
                "lastModifiedDate",
                "projectId"
            ]
        );
        assert_eq!(
            v["contentType"],
            serde_json::json!({"id": "svc-consent-acceptance-v1", "name": "Consent Acceptance",
                               "alias": "svc-consent-acceptance-v1", "searchEngine": null})
        );
        assert_eq!(v["createdDate"], "2026-03-01T08:30:00Z");
        assert_eq!(v["lastModifiedDate"], "2026-03-01T08:30:01.500Z");
        assert_eq!(v["createdBy"], "alice");
        assert_eq!(v["lastModifiedBy"], "bob");
        assert_eq!(v["projectId"], "p1");
    }

    #[test]
    fn reduced_envelope_has_only_id_type_project_data() {
        let v = serde_json::to_value(record().reduced_envelope()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "id": "c1",
                "contentType": {"id": "svc-consent-acceptance-v1", "name": "Consent Acceptance", "alias": "svc-consent-acceptance-v1"},
                "projectId": "p1",
                "data": {"status": "WITHDRAWN", "note": ""}
            })
        );
    }

    #[test]
    fn envelope_reads_any_offset() {
        let json = r#"{"id":"x","createdBy":"a","lastModifiedBy":"a",
            "createdDate":"2026-03-01T15:30:00+07:00","lastModifiedDate":"2026-03-01T08:30:00Z",
            "contentType":{"id":"svc-consent-v1","name":"Consent","alias":"svc-consent-v1","searchEngine":null},
            "projectId":"p","data":{}}"#;
        let e: Envelope = serde_json::from_str(json).unwrap();
        assert_eq!(e.created_date, e.last_modified_date);
        assert_eq!(
            serde_json::to_value(&e).unwrap()["createdDate"],
            "2026-03-01T08:30:00Z"
        );
    }

    #[test]
    fn record_round_trips() {
        let r = record();
        let back: ContentRecord =
            serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn content_type_names() {
        for t in ContentType::ALL {
            assert_eq!(ContentType::parse(t.as_str()), Some(t));
        }
        assert_eq!(
            ContentType::from_path("svc-nope-v1").unwrap_err().code(),
            "content_type_not_found"
        );
    }

    #[test]
    fn data_timestamps_have_fixed_width() {
        let t = parse_time("2026-01-01T07:00:00+07:00").unwrap();
        assert_eq!(format_time(t), "2026-01-01T00:00:00.000000Z");
        let t = parse_time("2026-01-01T00:00:00.1234567Z").unwrap();
        assert_eq!(format_time(t), "2026-01-01T00:00:00.123456Z");
        assert!(parse_time("2026-01-01").is_none());
    }
}
