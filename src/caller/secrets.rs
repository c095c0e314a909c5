//! A deterministic scan for credential-shaped text in checkpoint notes. It flags; it never
//! redacts, and a clean scan says nothing about whether the text is safe.

use serde::{Deserialize, Serialize};

/// A kind of credential shape, in the order flags are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensitiveFlag {
    /// `AKIA…`/`ASIA…` followed by 16 uppercase letters or digits.
    AwsAccessKey,
    /// A PEM private-key header.
    PrivateKeyBlock,
    /// An HTTP bearer authorization or a bearer JWT.
    BearerToken,
    /// A named secret assignment such as `OPENAI_API_KEY=`.
    CredentialAssignment,
}

impl SensitiveFlag {
    pub fn as_str(self) -> &'static str {
        match self {
            SensitiveFlag::AwsAccessKey => "aws_access_key",
            SensitiveFlag::PrivateKeyBlock => "private_key_block",
            SensitiveFlag::BearerToken => "bearer_token",
            SensitiveFlag::CredentialAssignment => "credential_assignment",
        }
    }
}

const PRIVATE_KEY_HEADERS: [&str; 3] = [
    "-----begin private key-----",
    "-----begin rsa private key-----",
    "-----begin openssh private key-----",
];
const BEARER_SHAPES: [&str; 2] = ["authorization: bearer ", "bearer eyj"];
const ASSIGNMENTS: [&str; 4] = [
    "openai_api_key=",
    "anthropic_api_key=",
    "aws_secret_access_key=",
    "github_token=",
];

/// Returns the flags whose shape occurs in `text`, in [`SensitiveFlag`] order, each once.
pub fn scan(text: &str) -> Vec<SensitiveFlag> {
    let folded = text.to_ascii_lowercase();
    let contains_any = |needles: &[&str]| needles.iter().any(|n| folded.contains(n));
    let mut flags = Vec::new();
    if has_aws_access_key(text.as_bytes()) {
        flags.push(SensitiveFlag::AwsAccessKey);
    }
    if contains_any(&PRIVATE_KEY_HEADERS) {
        flags.push(SensitiveFlag::PrivateKeyBlock);
    }
    if contains_any(&BEARER_SHAPES) {
        flags.push(SensitiveFlag::BearerToken);
    }
    if contains_any(&ASSIGNMENTS) {
        flags.push(SensitiveFlag::CredentialAssignment);
    }
    flags
}

fn has_aws_access_key(bytes: &[u8]) -> bool {
    bytes.windows(20).any(|w| {
        (w.starts_with(b"AKIA") || w.starts_with(b"ASIA"))
            && w[4..].iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use SensitiveFlag::*;

    #[test]
    fn each_credential_shape_is_flagged() {
        assert_eq!(scan("key AKIAABCDEFGHIJKLMNOP end"), vec![AwsAccessKey]);
        assert_eq!(scan("ASIA0123456789ABCDEF"), vec![AwsAccessKey]);
        assert_eq!(scan("-----BEGIN OPENSSH PRIVATE KEY-----\nabc"), vec![PrivateKeyBlock]);
        assert_eq!(scan("-----begin rsa private key-----"), vec![PrivateKeyBlock]);
        assert_eq!(scan("Authorization: Bearer abc"), vec![BearerToken]);
        assert_eq!(scan("token is Bearer eyJhbGciOi"), vec![BearerToken]);
        assert_eq!(scan("export GITHUB_TOKEN=ghp_x"), vec![CredentialAssignment]);
        assert_eq!(scan("Anthropic_Api_Key=sk"), vec![CredentialAssignment]);
    }

    #[test]
    fn flags_come_in_a_fixed_order_without_repeats() {
        let text = "OPENAI_API_KEY=x Authorization: bearer y AKIAABCDEFGHIJKLMNOP \
                    -----BEGIN PRIVATE KEY----- AKIAZZZZZZZZZZZZZZZZ";
        assert_eq!(
            scan(text),
            vec![AwsAccessKey, PrivateKeyBlock, BearerToken, CredentialAssignment]
        );
    }

    #[test]
    fn near_misses_are_not_flagged() {
        assert!(scan("akiaabcdefghijklmnop").is_empty());
        assert!(scan("AKIAabcdefghijklmnop").is_empty());
        assert!(scan("AKIAABCDEFGHIJKLMNO").is_empty());
        assert!(scan("the bearer of bad news; OPENAI_API_KEY is set elsewhere").is_empty());
        assert!(scan("-----BEGIN PUBLIC KEY-----").is_empty());
    }
}
