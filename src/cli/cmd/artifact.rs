//! `memoree artifact put|get|revise|history|forget` (and `purge`, in `portable.rs`).
//!
//! `put` and `revise` read a file or stdin (never more than the artifact limit plus one
//! byte) and send UTF-8 as `text`, anything else as `base64`. `get --output` materializes
//! the content on the client: atomically, never replacing an existing path unless
//! `--force`, never following a symbolic link planted at the destination, and without
//! echoing the content it wrote.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use crate::cli::GlobalArgs;
use crate::cli::error::{CliError, CliResult};
use crate::cli::request::{Call, actor_from_env};
use crate::fsutil::{self, FsError};
use crate::protocol::Response;
use crate::protocol::artifact::{
    ArtifactContent, ArtifactForgetInput, ArtifactGetInput, ArtifactHistoryInput, ArtifactPutInput,
    ArtifactReviseInput, DEFAULT_MEDIA_TYPE,
};
use crate::protocol::limits::{MAX_ARTIFACT_BYTES, MAX_ENCODED_CONTENT_BYTES};

/// The media type of a file whose extension says nothing.
const FALLBACK_MEDIA_TYPE: &str = "application/octet-stream";

/// Store, read, revise and forget artifacts (exact, revisioned source material).
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree artifact put docs/adr-7.md --kind decision --title 'ADR 7: storage'")]
pub struct ArtifactArgs {
    #[command(subcommand)]
    command: ArtifactCommand,
}

#[derive(Debug, Subcommand)]
enum ArtifactCommand {
    Put(PutArgs),
    Get(GetArgs),
    Revise(ReviseArgs),
    History(HistoryArgs),
    Forget(ForgetArgs),
    Purge(super::portable::ArtifactPurgeArgs),
}

/// Store a file (or stdin with `-`) as a new artifact in the ambient scope.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree artifact put notes.md --kind design\n  \
                        git log -1 | memoree artifact put - --kind commit --title 'Last commit'")]
struct PutArgs {
    /// The file to store, or `-` for stdin.
    source: String,
    /// Artifact kind.
    #[arg(long, default_value = "document")]
    kind: String,
    /// Title (default: the canonical file path, or `stdin`).
    #[arg(long)]
    title: Option<String>,
    /// Media type (default: guessed from the extension; `text/plain; charset=utf-8` for stdin).
    #[arg(long)]
    media_type: Option<String>,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// Read an artifact revision (the current one by default), optionally into a file.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  memoree artifact get art_01J... --metadata-only\n  \
                        memoree artifact get art_01J... --revision arev_01J... --output /tmp/adr.md")]
struct GetArgs {
    artifact_id: String,
    /// An exact revision id.
    #[arg(long)]
    revision: Option<String>,
    /// Write the content to PATH instead of printing it; refuses an existing path.
    #[arg(long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Replace an existing file at --output (a symbolic link there is replaced, not followed).
    #[arg(long, requires = "output")]
    force: bool,
    /// Leave the content out (ignored with --output).
    #[arg(long)]
    metadata_only: bool,
}

/// Store new content as the next revision of an artifact.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree artifact revise art_01J... notes.md --if-revision arev_01J...")]
struct ReviseArgs {
    artifact_id: String,
    /// The file holding the new content, or `-` for stdin.
    source: String,
    /// The revision you read; a different current revision is REVISION_CONFLICT.
    #[arg(long)]
    if_revision: String,
    /// New title (default: keep the current one).
    #[arg(long)]
    title: Option<String>,
    /// New media type (default: keep the current one; the file extension is not consulted).
    #[arg(long)]
    media_type: Option<String>,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// List an artifact's revisions, newest first, without content.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree artifact history art_01J... --limit 10 --before-revision-number 11")]
struct HistoryArgs {
    artifact_id: String,
    /// Revisions per page (1 to 100).
    #[arg(long, default_value_t = 50)]
    limit: i64,
    /// Exclusive cursor: only revisions numbered below this.
    #[arg(long)]
    before_revision_number: Option<i64>,
}

/// Mark an artifact forgotten (it stays readable by exact get).
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  memoree artifact forget art_01J... --reason 'pasted by mistake'")]
struct ForgetArgs {
    artifact_id: String,
    /// Why it is forgotten.
    #[arg(long)]
    reason: String,
    /// Idempotency key (default: a fresh `auto_<request id>`); reuse it only to retry.
    #[arg(long)]
    idempotency_key: Option<String>,
}

pub(crate) fn run(args: ArtifactArgs, global: &GlobalArgs) -> CliResult<Response> {
    match args.command {
        ArtifactCommand::Put(args) => put(args, global),
        ArtifactCommand::Get(args) => get(args, global),
        ArtifactCommand::Revise(args) => revise(args, global),
        ArtifactCommand::History(args) => history(args, global),
        ArtifactCommand::Forget(args) => forget(args, global),
        ArtifactCommand::Purge(args) => super::portable::artifact_purge(args, global),
    }
}

/// The provenance of content read by the CLI: `{"source": <canonical path or stdin>}`.
fn provenance(source: &Source) -> Map<String, Value> {
    Map::from_iter([("source".to_owned(), Value::from(source.label.as_str()))])
}

fn put(args: PutArgs, global: &GlobalArgs) -> CliResult<Response> {
    let source = Source::read(&args.source)?;
    let input = ArtifactPutInput {
        kind: args.kind,
        title: args.title.unwrap_or_else(|| source.label.clone()),
        media_type: args.media_type.unwrap_or_else(|| source.guessed_media_type()),
        provenance: provenance(&source),
        content: content(source.bytes),
        actor: actor_from_env()?,
    };
    Call::new(input).idempotency_key(args.idempotency_key).send(global)
}

fn revise(args: ReviseArgs, global: &GlobalArgs) -> CliResult<Response> {
    let source = Source::read(&args.source)?;
    let input = ArtifactReviseInput {
        artifact_id: args.artifact_id.into(),
        if_revision: args.if_revision.into(),
        title: args.title,
        media_type: args.media_type,
        provenance: provenance(&source),
        content: content(source.bytes),
        actor: actor_from_env()?,
    };
    Call::new(input).idempotency_key(args.idempotency_key).send(global)
}

fn get(args: GetArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ArtifactGetInput {
        artifact_id: args.artifact_id.into(),
        revision_id: args.revision.map(Into::into),
        include_content: !(args.metadata_only && args.output.is_none()),
    };
    let response = Call::new(input).send(global)?;
    match &args.output {
        Some(dest) if response.ok => {
            let request_id = response.request_id.clone();
            materialize(response, dest, args.force).map_err(|e| e.at(request_id))
        }
        _ => Ok(response),
    }
}

fn history(args: HistoryArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ArtifactHistoryInput {
        artifact_id: args.artifact_id.into(),
        limit: args.limit,
        before_revision_number: args.before_revision_number,
    };
    Call::new(input).send(global)
}

fn forget(args: ForgetArgs, global: &GlobalArgs) -> CliResult<Response> {
    let input = ArtifactForgetInput {
        artifact_id: args.artifact_id.into(),
        reason: args.reason,
    };
    Call::new(input).idempotency_key(args.idempotency_key).send(global)
}

/// Content read from a file or stdin, with its provenance label.
struct Source {
    bytes: Vec<u8>,
    /// The canonical file path, or `stdin`.
    label: String,
    /// The canonical file path; `None` for stdin.
    path: Option<PathBuf>,
}

impl Source {
    /// Reads `-` (stdin) or a file. A file over the limit is refused from its metadata,
    /// before any byte is read; stdin is read at most one byte past the limit.
    fn read(arg: &str) -> Result<Source, CliError> {
        if arg == "-" {
            let bytes = read_limited(std::io::stdin().lock(), "stdin")?;
            return Ok(Source {
                bytes,
                label: "stdin".to_owned(),
                path: None,
            });
        }
        let invalid = |message: String| CliError::Invalid(message);
        let path = std::fs::canonicalize(arg).map_err(|e| invalid(format!("cannot read input file {arg}: {e}")))?;
        let metadata =
            std::fs::metadata(&path).map_err(|e| invalid(format!("cannot read input file {}: {e}", path.display())))?;
        if !metadata.is_file() {
            return Err(invalid(format!("input {} is not a regular file", path.display())));
        }
        if metadata.len() > MAX_ARTIFACT_BYTES as u64 {
            return Err(artifact_too_large(&path.display().to_string()));
        }
        let file = File::open(&path).map_err(|e| invalid(format!("cannot read input file {}: {e}", path.display())))?;
        let bytes = read_limited(file, &path.display().to_string())?;
        Ok(Source {
            bytes,
            label: path.display().to_string(),
            path: Some(path),
        })
    }

    /// The media type guessed from the file extension; stdin is UTF-8 text.
    fn guessed_media_type(&self) -> String {
        match &self.path {
            None => DEFAULT_MEDIA_TYPE.to_owned(),
            Some(path) => guess_media_type(path),
        }
    }
}

fn guess_media_type(path: &Path) -> String {
    mime_guess::from_path(path)
        .first_raw()
        .unwrap_or(FALLBACK_MEDIA_TYPE)
        .to_owned()
}

fn read_limited(reader: impl Read, what: &str) -> Result<Vec<u8>, CliError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_ARTIFACT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::io(format_args!("reading {what}"), e))?;
    if bytes.len() > MAX_ARTIFACT_BYTES {
        return Err(artifact_too_large(what));
    }
    Ok(bytes)
}

fn artifact_too_large(what: &str) -> CliError {
    CliError::TooLarge(format!("{what} exceeds {MAX_ARTIFACT_BYTES} bytes"))
}

/// `text` when the bytes are UTF-8 and stay within the encoded limit as a JSON string,
/// `base64` otherwise.
fn content(bytes: Vec<u8>) -> ArtifactContent {
    match String::from_utf8(bytes) {
        Ok(text) if json_string_len(&text) <= MAX_ENCODED_CONTENT_BYTES => ArtifactContent::Text(text),
        Ok(text) => ArtifactContent::Base64(base64::engine::general_purpose::STANDARD.encode(text)),
        Err(e) => ArtifactContent::Base64(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
    }
}

/// The length of `text` as an escaped JSON string, quotes excluded.
fn json_string_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(usize::MAX, |s| s.len() - 2)
}

/// Writes the content of a successful `artifact.get` to `dest` and replaces `content` in
/// the result with `materialized_path` (the path as given). The rest of the result is
/// printed as the daemon sent it.
fn materialize(mut response: Response, dest: &Path, force: bool) -> Result<Response, CliError> {
    let Some(result) = response.result.as_mut().and_then(Value::as_object_mut) else {
        return Err(CliError::Internal("artifact.get returned no result object".to_owned()));
    };
    let content = result.remove("content").map(serde_json::from_value::<ArtifactContent>);
    let bytes = match content {
        Some(Ok(ArtifactContent::Text(text))) => text.into_bytes(),
        Some(Ok(ArtifactContent::Base64(data))) => base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| CliError::Integrity(format!("artifact content is not valid base64: {e}")))?,
        Some(Err(e)) => return Err(CliError::Internal(format!("artifact content is malformed: {e}"))),
        None => {
            return Err(CliError::Internal(
                "artifact.get returned no content to write".to_owned(),
            ));
        }
    };
    // --force replaces a file or a symbolic link, never a directory.
    if std::fs::symlink_metadata(dest).is_ok_and(|meta| meta.is_dir()) {
        return Err(CliError::Invalid(format!(
            "output {} is a directory; name a file",
            dest.display()
        )));
    }
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        if unusable_output(&e) {
            return Err(CliError::Invalid(format!(
                "cannot create the output directory {}: {e}",
                parent.display()
            )));
        }
        return Err(CliError::io(format_args!("creating {}", parent.display()), e));
    }
    match fsutil::write_atomic(dest, &bytes, force) {
        Ok(()) => {}
        Err(FsError::AlreadyExists { .. }) => {
            return Err(CliError::Invalid(format!(
                "output already exists (pass --force to replace it): {}",
                dest.display()
            )));
        }
        Err(FsError::Io { source, .. }) if unusable_output(&source) => {
            return Err(CliError::Invalid(format!(
                "cannot write output {}: {source}",
                dest.display()
            )));
        }
        Err(e) => return Err(CliError::Fs(e)),
    }
    result.insert("materialized_path".to_owned(), Value::from(dest.display().to_string()));
    Ok(response)
}

/// Failures that say the output path itself is unusable (a file where a directory must
/// be, a name the filesystem refuses): the caller's error, not an I/O fault.
fn unusable_output(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::AlreadyExists
            | ErrorKind::NotADirectory
            | ErrorKind::IsADirectory
            | ErrorKind::InvalidInput
            | ErrorKind::InvalidFilename
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_guessed_from_the_extension() {
        let cases = [
            ("a.md", "text/markdown"),
            ("a.json", "application/json"),
            ("a.svg", "image/svg+xml"),
            ("a.rs", "text/x-rust"),
            ("a.toml", "text/x-toml"),
            ("a.yaml", "text/x-yaml"),
            ("noext", FALLBACK_MEDIA_TYPE),
        ];
        for (name, expected) in cases {
            assert_eq!(guess_media_type(Path::new(name)), expected, "{name}");
        }
    }

    #[test]
    fn utf8_is_sent_as_text_and_other_bytes_as_base64() {
        assert_eq!(content(b"hi\n".to_vec()), ArtifactContent::Text("hi\n".to_owned()));
        assert_eq!(content(vec![0xff, 0x00]), ArtifactContent::Base64("/wA=".to_owned()));
    }

    #[test]
    fn text_whose_escaping_would_pass_the_encoded_limit_goes_as_base64() {
        // Every NUL escapes to six bytes (`\u0000`), so 8 MiB of them exceed 12 MiB encoded.
        let nuls = vec![0u8; MAX_ARTIFACT_BYTES];
        assert!(matches!(content(nuls), ArtifactContent::Base64(_)));
        assert_eq!(json_string_len("a\"b"), 4);
    }
}
