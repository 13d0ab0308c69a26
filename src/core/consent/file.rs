//! Uploaded files: the screen a consent shows (`formScreen`, typed `File`
//! by the specification), stored content-addressed by the SHA-256 of its
//! bytes in the project.
//!
//! Four types are accepted — PNG, JPEG, PDF and HTML — and the bytes must
//! be what the declared `Content-Type` says: the type is checked against
//! the file's first bytes (its magic number), never taken from the header
//! alone, so a script cannot be uploaded as an image.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::core::error::ErrorCode;
use crate::core::limits::MAX_FILE_LEN;
use crate::Error;

/// The types a file may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// `image/png`.
    Png,
    /// `image/jpeg`.
    Jpeg,
    /// `application/pdf`.
    Pdf,
    /// `text/html`.
    Html,
}

impl FileType {
    /// Every type, in the order the documentation lists them.
    pub const ALL: [FileType; 4] = [FileType::Png, FileType::Jpeg, FileType::Pdf, FileType::Html];

    /// The media type.
    pub fn mime(self) -> &'static str {
        match self {
            FileType::Png => "image/png",
            FileType::Jpeg => "image/jpeg",
            FileType::Pdf => "application/pdf",
            FileType::Html => "text/html",
        }
    }

    /// The file name extension, for `Content-Disposition`.
    pub fn extension(self) -> &'static str {
        match self {
            FileType::Png => "png",
            FileType::Jpeg => "jpg",
            FileType::Pdf => "pdf",
            FileType::Html => "html",
        }
    }

    /// The type of a `Content-Type` value (parameters such as `charset`
    /// ignored, case-insensitive); `None` for any other type.
    pub fn from_mime(content_type: &str) -> Option<FileType> {
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        FileType::ALL
            .into_iter()
            .find(|t| t.mime().eq_ignore_ascii_case(essence))
    }

    /// The type the bytes show by their first bytes: the PNG signature,
    /// the JPEG start-of-image marker, `%PDF-`, or (after an optional
    /// UTF-8 byte order mark and white space) `<!doctype html` or `<html`.
    pub fn sniff(bytes: &[u8]) -> Option<FileType> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Some(FileType::Png);
        }
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            return Some(FileType::Jpeg);
        }
        if bytes.starts_with(b"%PDF-") {
            return Some(FileType::Pdf);
        }
        let text = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let start = text
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(text.len());
        let text = &text[start..];
        let html = [&b"<!doctype html"[..], b"<html"]
            .iter()
            .any(|p| text.len() >= p.len() && text[..p.len()].eq_ignore_ascii_case(p));
        html.then_some(FileType::Html)
    }
}

/// Checks an upload: the declared `Content-Type` must be one of the four
/// types (415 `unsupported_media_type`), the body not empty (400
/// `body_required`) and at most [`MAX_FILE_LEN`] bytes (413
/// `payload_too_large`), and its first bytes those of the declared type
/// (422 `file_type_mismatch`).
pub fn check_upload(content_type: Option<&str>, bytes: &[u8]) -> Result<FileType, Error> {
    let declared = content_type.and_then(FileType::from_mime).ok_or_else(|| {
        Error::new(
            ErrorCode::UnsupportedMediaType,
            "a file is uploaded as its raw bytes with Content-Type image/png, image/jpeg, application/pdf or text/html",
        )
    })?;
    if bytes.is_empty() {
        return Err(Error::new(ErrorCode::BodyRequired, "the file is empty"));
    }
    if bytes.len() > MAX_FILE_LEN {
        return Err(Error::new(
            ErrorCode::PayloadTooLarge,
            format!("a file is at most {MAX_FILE_LEN} bytes"),
        ));
    }
    match FileType::sniff(bytes) {
        Some(t) if t == declared => Ok(declared),
        Some(t) => Err(Error::new(
            ErrorCode::FileTypeMismatch,
            format!(
                "the bytes are {}, not {} as the Content-Type says",
                t.mime(),
                declared.mime()
            ),
        )),
        None => Err(Error::new(
            ErrorCode::FileTypeMismatch,
            format!(
                "the bytes do not start as {} does (a PNG, JPEG, PDF or HTML file)",
                declared.mime()
            ),
        )),
    }
}

/// Whether `s` is a SHA-256 as files are named: 64 lowercase hex digits.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A stored file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// The project.
    pub project_id: String,
    /// Hex SHA-256 of the bytes: the file's name.
    pub sha256: String,
    /// Its media type (one of [`FileType`]'s).
    pub content_type: String,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The `sub` of the token that uploaded it first.
    pub created_by: String,
    /// When it was uploaded first.
    pub created_date: DateTime<Utc>,
}

impl StoredFile {
    /// What the upload route answers about it.
    pub fn info(&self) -> FileInfo {
        FileInfo {
            sha256: self.sha256.clone(),
            content_type: self.content_type.clone(),
            size: self.bytes.len() as u64,
            created_by: self.created_by.clone(),
            created_date: self.created_date,
        }
    }
}

/// A file's description, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FileInfo {
    /// Hex SHA-256 of the bytes: the file's name, what `formScreen` holds.
    pub sha256: String,
    /// Its media type.
    pub content_type: String,
    /// Its length in bytes.
    pub size: u64,
    /// The `sub` of the token that uploaded it first.
    pub created_by: String,
    /// When it was uploaded first.
    pub created_date: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_sniffed_not_trusted() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(
            check_upload(Some("image/png"), png).ok(),
            Some(FileType::Png)
        );
        assert_eq!(
            check_upload(Some("image/jpeg"), &[0xFF, 0xD8, 0xFF, 0xE0]).ok(),
            Some(FileType::Jpeg)
        );
        assert_eq!(
            check_upload(Some("application/pdf"), b"%PDF-1.7\n").ok(),
            Some(FileType::Pdf)
        );
        assert_eq!(
            check_upload(
                Some("Text/HTML; charset=utf-8"),
                b"\xEF\xBB\xBF\n <!DOCTYPE html><p>x"
            )
            .ok(),
            Some(FileType::Html)
        );
        let code = |r: Result<FileType, Error>| r.unwrap_err().error_code();
        assert_eq!(
            code(check_upload(Some("image/png"), b"<html><script>")),
            ErrorCode::FileTypeMismatch
        );
        assert_eq!(
            code(check_upload(Some("text/html"), b"plain text")),
            ErrorCode::FileTypeMismatch
        );
        assert_eq!(
            code(check_upload(Some("image/svg+xml"), b"<svg/>")),
            ErrorCode::UnsupportedMediaType
        );
        assert_eq!(
            code(check_upload(None, png)),
            ErrorCode::UnsupportedMediaType
        );
        assert_eq!(
            code(check_upload(Some("image/png"), b"")),
            ErrorCode::BodyRequired
        );
        let big = [png.as_slice(), &vec![0; MAX_FILE_LEN]].concat();
        assert_eq!(
            code(check_upload(Some("image/png"), &big)),
            ErrorCode::PayloadTooLarge
        );
    }

    #[test]
    fn file_names_are_lowercase_sha256() {
        let h = crate::core::hash::sha256_hex(b"x");
        assert!(is_sha256(&h));
        assert!(!is_sha256(&h.to_uppercase()));
        assert!(!is_sha256(&h[1..]));
        assert!(!is_sha256("../etc/passwd"));
    }
}
