//! The kinds of content the console edits, and how each attribute is
//! shown.

use serde_json::Value;

use crate::adapter::admin::guard::Fail;
use crate::core::consent::ContentType;

/// How an attribute is edited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    Text,
    Area,
    Number,
    /// A list, one item per line.
    Lines,
    Status,
    /// The id of a privacy notice.
    Notice,
}

/// One kind of content the console edits.
pub struct Kind {
    pub slug: &'static str,
    pub content_type: ContentType,
    pub singular: &'static str,
    pub plural: &'static str,
    /// The attribute that names a record in lists.
    pub title: &'static str,
    /// Attributes edited, in order: (name, label, input). `…En`/`…Th` pairs
    /// are shown side by side.
    pub attributes: &'static [(&'static str, &'static str, Input)],
    /// The list's filters (exact matches on these attributes).
    pub filters: &'static [(&'static str, &'static str)],
    /// Columns of the list.
    pub columns: &'static [(&'static str, &'static str)],
}

pub const KINDS: [Kind; 3] = [
    Kind {
        slug: "notices",
        content_type: ContentType::PrivacyNotice,
        singular: "privacy notice",
        plural: "Privacy notices",
        title: "name",
        attributes: &[
            ("name", "Name", Input::Text),
            ("revision", "Revision", Input::Number),
            ("status", "Status", Input::Status),
            ("descriptionEn", "Text (English)", Input::Area),
            ("descriptionTh", "Text (Thai)", Input::Area),
        ],
        filters: &[("status", "Status"), ("revision", "Revision")],
        columns: &[("revision", "Revision"), ("status", "Status")],
    },
    Kind {
        slug: "consents",
        content_type: ContentType::Consent,
        singular: "consent",
        plural: "Consents",
        title: "name",
        attributes: &[
            ("name", "Name", Input::Text),
            ("application", "Application", Input::Text),
            ("revision", "Revision", Input::Number),
            ("status", "Status", Input::Status),
            ("privacyNoticeRef", "Privacy notice", Input::Notice),
            ("purposes", "Purpose codes (one per line)", Input::Lines),
            (
                "lifespan",
                "Lifespan in days (empty or 0: never expires)",
                Input::Number,
            ),
            ("descriptionEn", "Text (English)", Input::Area),
            ("descriptionTh", "Text (Thai)", Input::Area),
            ("ref1", "Reference 1", Input::Text),
            ("ref2", "Reference 2", Input::Text),
            ("ref3", "Reference 3", Input::Text),
        ],
        filters: &[
            ("application", "Application"),
            ("status", "Status"),
            ("purposes", "Has purpose"),
        ],
        columns: &[
            ("application", "Application"),
            ("revision", "Revision"),
            ("status", "Status"),
        ],
    },
    Kind {
        slug: "purposes",
        content_type: ContentType::Purpose,
        singular: "purpose",
        plural: "Purposes",
        title: "code",
        attributes: &[
            ("code", "Code", Input::Text),
            ("nameEn", "Name (English)", Input::Text),
            ("nameTh", "Name (Thai)", Input::Text),
        ],
        filters: &[("code", "Code")],
        columns: &[("nameEn", "English"), ("nameTh", "Thai")],
    },
];

pub fn kind(slug: &str) -> Result<&'static Kind, Fail> {
    KINDS
        .iter()
        .find(|k| k.slug == slug)
        .ok_or_else(|| Fail::NotFound(format!("There is no content list {slug:?}.")))
}

/// An attribute's value as the form shows it.
pub fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}
