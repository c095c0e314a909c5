//! Sends what a format read to a daemon, through any [`Transport`] (the CLI's autostarted
//! socket client, or `service::InProcess` in benches).
//!
//! **Identity.** An item's key (format, canonical path, id in the file) is recorded in its
//! artifact's provenance as `import_key`, with `content_blake3`. Before writing, the driver
//! lists the artifacts of the target scope and indexes them by `import_key`: an unknown key is
//! `artifact.put`, a known key with another hash is `artifact.revise` of that artifact, the
//! same hash is left alone. Every mutation's idempotency key is derived from the item key and
//! the revision or content it applies to, so a retry after a crash replays instead of
//! duplicating.
//!
//! **Claims.** A new artifact gets its claims asserted. For an existing one, the claims citing
//! it are listed and matched by type and statement: a match on the current revision is left
//! alone, a match on an older revision is revised to cite the new span, a missing one is
//! asserted, and an imported claim (one locator, on this artifact, by the same actor) whose
//! statement left the source is retracted. Claims anyone else made are never touched.
//!
//! **Items are units.** An item is parsed whole before anything is sent; one failed request
//! ends that item with an issue and the driver moves on; re-running completes it.
//!
//! **Windows.** To a daemon that lists `pipelined_requests`, each worker sends a window of
//! up to [`PIPELINE_WINDOW`] items at a time: the new items' `artifact.put`s pipelined on its
//! connection, then all their claims, so the daemon's group commit takes many writes per
//! commit. Relations go the same way. Revised and unchanged items go one at a time. In a
//! window a failed claim does not stop its item's other claims, which were already sent.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use super::{ClaimSpec, Format, Issue, Item, RelationSpec, Source, scope_for, text};
use crate::client::socket::PIPELINE_WINDOW;
use crate::progress::Progress;
use crate::protocol::artifact::{ArtifactContent, ArtifactPutInput, ArtifactReviseInput};
use crate::protocol::browse::{ArtifactListInput, ClaimListInput};
use crate::protocol::claim::{ClaimAssertInput, ClaimRecord, ClaimRetractInput, ClaimReviseInput, EvidenceLocator};
use crate::protocol::ids::{ArtifactId, ArtifactRevisionId};
use crate::protocol::limits::MAX_BROWSE_ITEMS;
use crate::protocol::local::{ForeignImportResult, ImportCounts, ImportPreview, UnresolvedTarget};
use crate::protocol::meta::CapabilitiesInput;
use crate::protocol::relation::{EntityType, RelationPutInput, RelationType};
use crate::protocol::{AmbientContext, ContextSource, ErrorBody, Horizon, Input, Request, RequestId, Response};
use crate::transport::{self, ClientError, Exchange, Transport};

/// How many items a dry run previews.
const PREVIEW_ITEMS: usize = 5;

/// Where and how to import.
#[derive(Clone, Debug)]
pub struct Options {
    pub format: Format,
    pub sources: Vec<String>,
    pub context: AmbientContext,
    pub context_source: ContextSource,
    pub actor: Option<String>,
    pub dry_run: bool,
}

/// An artifact already in the store, by import key.
#[derive(Clone, Debug)]
struct Known {
    artifact_id: ArtifactId,
    revision_id: ArtifactRevisionId,
    hash: String,
}

/// A failed request: the daemon's refusal (which ends an item, or the whole import when
/// listing what exists fails), or no daemon at all (which ends the import).
#[derive(Debug)]
pub enum Failed {
    Refused(ErrorBody),
    Client(ClientError),
}

impl From<ClientError> for Failed {
    fn from(error: ClientError) -> Failed {
        Failed::Client(error)
    }
}

struct Driver<'a> {
    transport: &'a dyn Transport,
    options: &'a Options,
    result: ForeignImportResult,
    /// Independent writes sent at once: [`PIPELINE_WINDOW`] to a daemon that pipelines,
    /// else one.
    window: usize,
}

/// What every worker reads: artifacts and claims already in the store.
#[derive(Default)]
struct Index {
    artifacts: HashMap<String, Known>,
    claims: HashMap<ArtifactId, Vec<ClaimRecord>>,
}

/// Imports `source` over `transports` (one worker each, at least one). Only a transport
/// failure (no daemon) is an `Err`; everything the daemon refuses is an issue in the result.
pub fn run(
    transports: &[Box<dyn Transport>],
    source: Source,
    options: &Options,
    progress: &mut Progress,
) -> Result<ForeignImportResult, Failed> {
    let empty = ForeignImportResult {
        format: options.format.to_string(),
        dry_run: options.dry_run,
        sources: options.sources.clone(),
        context: options.context.clone(),
        items: 0,
        artifacts: ImportCounts::default(),
        claims: ImportCounts::default(),
        relations: ImportCounts::default(),
        skipped: 0,
        issues: Vec::new(),
        unresolved: Vec::new(),
        relation_types: BTreeMap::new(),
        preview: Vec::new(),
    };
    if transports.is_empty() {
        return Err(Failed::Client(ClientError::Config(
            "no transport to import over".to_owned(),
        )));
    }
    let mut drivers: Vec<Driver<'_>> = transports
        .iter()
        .map(|transport| Driver {
            transport: transport.as_ref(),
            options,
            result: empty.clone(),
            window: 1,
        })
        .collect();
    if !options.dry_run && drivers[0].daemon_pipelines()? {
        for driver in &mut drivers {
            driver.window = PIPELINE_WINDOW;
        }
    }
    let window = drivers[0].window;
    let mut index = Index::default();
    let mut scopes: Vec<Option<&str>> = source.items.iter().map(|i| i.project.as_deref()).collect();
    scopes.sort_unstable();
    scopes.dedup();
    for project in scopes {
        drivers[0].index(&scope_for(&options.context, project), &mut index)?;
    }
    let ids: Vec<OnceLock<ArtifactId>> = source.items.iter().map(|_| OnceLock::new()).collect();
    let progress = Mutex::new(progress);
    let chunks: Vec<_> = source.items.chunks(window).collect();
    parallel(&mut drivers, &chunks, |driver, chunk, items| {
        for (offset, id) in driver.items(items, &index)?.into_iter().enumerate() {
            if let Some(id) = id {
                let _ = ids[chunk * window + offset].set(id);
            }
        }
        progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .inc(items.len() as u64);
        Ok(())
    })?;
    let mut by_alias: HashMap<&str, &ArtifactId> = HashMap::new();
    for (item, id) in source.items.iter().zip(&ids) {
        if let Some(id) = id.get() {
            for alias in &item.aliases {
                by_alias.entry(alias.as_str()).or_insert(id);
            }
        }
    }
    let mut result = empty.clone();
    let mut relations = Vec::new();
    for relation in &source.relations {
        let kebab = text::kebab(&relation.relation_type);
        result
            .relation_types
            .insert(relation.relation_type.clone(), kebab.clone());
        match (by_alias.get(relation.from.as_str()), by_alias.get(relation.to.as_str())) {
            (Some(from), Some(to)) => relations.push((relation, *from, *to, kebab)),
            (from, _) => {
                result.skipped += 1;
                result.unresolved.push(UnresolvedTarget {
                    file: relation.file.clone(),
                    line: relation.line,
                    target: if from.is_some() { &relation.to } else { &relation.from }.clone(),
                });
            }
        }
    }
    let chunks: Vec<_> = relations.chunks(window).collect();
    parallel(&mut drivers, &chunks, |driver, _, relations| {
        driver.relations(relations)
    })?;
    result.items = source.items.len() as u64;
    result.skipped += source.issues.len() as u64;
    result.issues = source.issues;
    for driver in drivers {
        result.merge(driver.result);
    }
    result.issues.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    result
        .unresolved
        .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    Ok(result)
}

/// Runs `job` on every element of `jobs`, one thread per driver, in any order. The first
/// transport failure stops every worker and is returned.
fn parallel<T: Sync>(
    drivers: &mut [Driver<'_>],
    jobs: &[T],
    job: impl Fn(&mut Driver<'_>, usize, &T) -> Result<(), ClientError> + Sync,
) -> Result<(), ClientError> {
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(None);
    let work = |driver: &mut Driver<'_>| {
        loop {
            let position = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = jobs.get(position) else { return };
            if let Err(error) = job(driver, position, item) {
                next.store(jobs.len(), Ordering::Relaxed);
                failed.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(error);
                return;
            }
        }
    };
    if drivers.len() == 1 || jobs.len() < 2 * drivers.len() {
        work(&mut drivers[0]);
    } else {
        std::thread::scope(|scope| {
            for driver in drivers.iter_mut() {
                scope.spawn(|| work(driver));
            }
        });
    }
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

impl ForeignImportResult {
    /// Adds a worker's counts and issues.
    fn merge(&mut self, other: ForeignImportResult) {
        for (mine, theirs) in [
            (&mut self.artifacts, other.artifacts),
            (&mut self.claims, other.claims),
            (&mut self.relations, other.relations),
        ] {
            mine.created += theirs.created;
            mine.revised += theirs.revised;
            mine.unchanged += theirs.unchanged;
            mine.retracted += theirs.retracted;
        }
        self.skipped += other.skipped;
        self.issues.extend(other.issues);
        self.preview.extend(other.preview);
        self.preview.truncate(PREVIEW_ITEMS);
    }
}

/// A deterministic idempotency key: `imp_<what>_` and 32 hex digits of the parts' digest.
fn key(what: &str, parts: &[&str]) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    format!("imp_{what}_{}", &hasher.finalize().to_hex()[..32])
}

/// What identifies an item's content: kind, title and bytes.
fn content_hash(item: &Item) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in [&item.kind, &item.title, &item.media_type, &item.content] {
        hasher.update(part.as_bytes());
        hasher.update(b"\0");
    }
    hasher.finalize().to_hex().to_string()
}

/// A relation to write: its spec, the two artifacts, and its kebab-case type.
type Link<'a> = (&'a RelationSpec, &'a ArtifactId, &'a ArtifactId, String);

impl Driver<'_> {
    /// Writes `relations` (independent of each other) in one window.
    fn relations(&mut self, relations: &[Link<'_>]) -> Result<(), ClientError> {
        if self.options.dry_run {
            self.result.relations.created += relations.len() as u64;
            return Ok(());
        }
        let mut requests = Vec::with_capacity(relations.len());
        for (relation, from, to, kebab) in relations {
            let metadata = serde_json::json!({
                "source_format": self.options.format.as_str(),
                "relation_type": relation.relation_type,
                "relation_type_kebab": kebab,
            });
            let input = RelationPutInput {
                source_type: EntityType::Artifact,
                source_id: from.to_string(),
                relation: RelationType::References,
                target_type: EntityType::Artifact,
                target_id: to.to_string(),
                metadata: metadata.as_object().cloned().unwrap_or_default(),
            };
            let key = key("rel", &[from.as_ref(), to.as_ref(), &relation.relation_type]);
            requests.push(self.request(input, Some(key), &self.options.context)?);
        }
        let replies = self.transport.exchange_pipelined(&requests)?;
        for ((relation, ..), reply) in relations.iter().zip(replies) {
            match outcome::<RelationPutInput>(reply) {
                Ok(ack) if ack.created => self.result.relations.created += 1,
                Ok(_) => self.result.relations.unchanged += 1,
                Err(Failed::Client(error)) => return Err(error),
                Err(Failed::Refused(error)) => {
                    self.skip(Issue::at(&relation.file, Some(relation.line), error.message));
                }
            }
        }
        Ok(())
    }

    fn skip(&mut self, issue: Issue) {
        self.result.skipped += 1;
        self.result.issues.push(issue);
    }

    /// One request in `context`; a refusal is `Failed::Refused`.
    fn call<I: Input>(&self, input: I, key: Option<String>, context: &AmbientContext) -> Result<I::Output, Failed> {
        let request = self.request(input, key, context)?;
        outcome::<I>(self.transport.exchange_raw(&request)?)
    }

    /// The request document of `input` in `context`.
    fn request<I: Input>(
        &self,
        input: I,
        key: Option<String>,
        context: &AmbientContext,
    ) -> Result<Vec<u8>, ClientError> {
        let mut request =
            Request::new(RequestId::generate(), input).with_context(context.clone(), self.options.context_source);
        if let Some(key) = key {
            request = request.with_idempotency_key(key);
        }
        transport::encode(&request)
    }

    /// Whether the daemon serves pipelined requests (`capabilities.extensions`).
    fn daemon_pipelines(&self) -> Result<bool, ClientError> {
        let request = Request::new(RequestId::generate(), CapabilitiesInput {});
        Ok(match self.transport.exchange(&request)?.into_result() {
            Some(Ok(capabilities)) => capabilities
                .extensions
                .iter()
                .any(|e| e.as_ref() == "pipelined_requests"),
            _ => false,
        })
    }

    /// Imports a window of items; returns each one's artifact id (none for an item that
    /// failed, or in a dry run of a new item). New items are written together: their
    /// artifacts, then all their claims.
    fn items(&mut self, items: &[Item], index: &Index) -> Result<Vec<Option<ArtifactId>>, ClientError> {
        let new = |item: &&Item| !self.options.dry_run && !index.artifacts.contains_key(&item.key);
        let fresh: Vec<usize> = match items.iter().filter(new).count() {
            0 | 1 => Vec::new(),
            _ => (0..items.len()).filter(|&i| new(&&items[i])).collect(),
        };
        let mut ids = vec![None; items.len()];
        for (position, item) in items.iter().enumerate() {
            if fresh.contains(&position) {
                continue;
            }
            ids[position] = match self.item(item, index.artifacts.get(&item.key), index) {
                Ok(id) => id,
                Err(Failed::Client(error)) => return Err(error),
                Err(Failed::Refused(error)) => {
                    self.skip(Issue::at(&item.file, Some(item.line), error.message));
                    None
                }
            };
        }
        let created = self.create(&fresh.iter().map(|&i| &items[i]).collect::<Vec<_>>(), index)?;
        for (position, id) in fresh.into_iter().zip(created) {
            ids[position] = id;
        }
        Ok(ids)
    }

    /// Puts new items' artifacts together, then asserts all their claims together.
    fn create(&mut self, items: &[&Item], index: &Index) -> Result<Vec<Option<ArtifactId>>, ClientError> {
        let puts = items
            .iter()
            .map(|item| {
                let (input, key, context) = self.put(item);
                self.request(input, Some(key), &context)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let replies = self.transport.exchange_pipelined(&puts)?;
        let mut ids = vec![None; items.len()];
        let mut asserts = Vec::new();
        for (position, (item, reply)) in items.iter().zip(replies).enumerate() {
            let context = scope_for(&self.options.context, item.project.as_deref());
            let failed = match outcome::<ArtifactPutInput>(reply) {
                Ok(ack) => {
                    self.count_artifact(ack.created, false);
                    let (artifact_id, revision_id) = (ack.record.artifact_id, ack.record.revision_id);
                    if ack.created {
                        for spec in &item.claims {
                            let (input, key) = self.assert(item, spec, &artifact_id, &revision_id);
                            asserts.push((position, self.request(input, Some(key), &context)?));
                        }
                        ids[position] = Some(artifact_id);
                        continue;
                    }
                    // A replayed put (the artifact exists without its import key listed):
                    // bring its claims in line one by one.
                    let existing = index.claims.get(&artifact_id).cloned().unwrap_or_default();
                    match self.sync_claims(item, &artifact_id, &revision_id, existing, &context) {
                        Ok(()) => {
                            ids[position] = Some(artifact_id);
                            continue;
                        }
                        Err(failed) => failed,
                    }
                }
                Err(failed) => failed,
            };
            match failed {
                Failed::Client(error) => return Err(error),
                Failed::Refused(error) => self.skip(Issue::at(&item.file, Some(item.line), error.message)),
            }
        }
        let bodies: Vec<Vec<u8>> = asserts.iter().map(|(_, body)| body.clone()).collect();
        let replies = self.transport.exchange_pipelined(&bodies)?;
        for ((position, _), reply) in asserts.iter().zip(replies) {
            match outcome::<ClaimAssertInput>(reply) {
                Ok(ack) if ack.created => self.result.claims.created += 1,
                Ok(_) => self.result.claims.unchanged += 1,
                Err(Failed::Client(error)) => return Err(error),
                // One failed request ends its item with one issue; re-running completes it.
                Err(Failed::Refused(error)) => {
                    if ids[*position].take().is_some() {
                        let item = items[*position];
                        self.skip(Issue::at(&item.file, Some(item.line), error.message));
                    }
                }
            }
        }
        Ok(ids)
    }

    /// Indexes the imported artifacts of `context` by import key and, when there are any,
    /// the current claims of the scope by the artifacts they cite (one listing instead of
    /// one per artifact).
    fn index(&self, context: &AmbientContext, index: &mut Index) -> Result<(), Failed> {
        let mut before = None;
        let mut found = false;
        loop {
            let input = ArtifactListInput {
                horizon: Horizon::Ambient,
                reason: None,
                kind: None,
                status: None,
                limit: MAX_BROWSE_ITEMS as i64,
                before_commit_seq: before,
            };
            let page = self.call(input, None, context)?;
            for artifact in page.artifacts {
                let field = |name: &str| artifact.provenance.get(name).and_then(Value::as_str).map(str::to_owned);
                if let (Some(key), Some(hash)) = (field("import_key"), field("content_blake3")) {
                    found = true;
                    index.artifacts.entry(key).or_insert(Known {
                        artifact_id: artifact.artifact_id,
                        revision_id: artifact.revision_id,
                        hash,
                    });
                }
            }
            match page.next_before_commit_seq {
                Some(next) if page.truncated => before = Some(next),
                _ => break,
            }
        }
        if !found {
            return Ok(());
        }
        let mut before = None;
        loop {
            let input = ClaimListInput {
                horizon: Horizon::Ambient,
                reason: None,
                claim_type: None,
                status: None,
                temporal_state: None,
                cites_artifact_id: None,
                cites_revision_id: None,
                revisions: Default::default(),
                limit: MAX_BROWSE_ITEMS as i64,
                before_commit_seq: before,
            };
            let page = self.call(input, None, context)?;
            for claim in page.claims.into_iter().map(|item| item.record) {
                if claim.status.is_terminal() {
                    continue;
                }
                let mut cited: Vec<&ArtifactId> = claim.evidence.iter().map(|e| &e.artifact_id).collect();
                cited.dedup();
                for artifact_id in cited {
                    index.claims.entry(artifact_id.clone()).or_default().push(claim.clone());
                }
            }
            match page.next_before_commit_seq {
                Some(next) if page.truncated => before = Some(next),
                _ => return Ok(()),
            }
        }
    }

    /// Imports one item; returns its artifact id (none in a dry run of a new item).
    fn item(&mut self, item: &Item, known: Option<&Known>, index: &Index) -> Result<Option<ArtifactId>, Failed> {
        let hash = content_hash(item);
        let context = scope_for(&self.options.context, item.project.as_deref());
        let mut provenance = item.provenance.clone();
        provenance.insert("import_key".to_owned(), Value::from(item.key.as_str()));
        provenance.insert("content_blake3".to_owned(), Value::from(hash.as_str()));
        if self.options.dry_run {
            let action = match known {
                None => "create",
                Some(known) if known.hash != hash => "revise",
                Some(_) => "unchanged",
            };
            match action {
                "create" => {
                    self.result.artifacts.created += 1;
                    self.result.claims.created += item.claims.len() as u64;
                }
                "revise" => self.result.artifacts.revised += 1,
                _ => self.result.artifacts.unchanged += 1,
            }
            if self.result.preview.len() < PREVIEW_ITEMS {
                self.result.preview.push(ImportPreview {
                    action: action.to_owned(),
                    key: item.key.clone(),
                    kind: item.kind.clone(),
                    title: item.title.clone(),
                    bytes: item.content.len() as u64,
                    claims: item.claims.len() as u64,
                });
            }
            return Ok(known
                .map(|k| k.artifact_id.clone())
                .or_else(|| Some(ArtifactId::from(item.key.clone()))));
        }
        let (artifact_id, revision_id, fresh) = match known {
            None => {
                let (input, key, _) = self.put(item);
                let ack = self.call(input, Some(key), &context)?;
                self.count_artifact(ack.created, false);
                (ack.record.artifact_id, ack.record.revision_id, ack.created)
            }
            Some(known) if known.hash != hash => {
                let input = ArtifactReviseInput {
                    artifact_id: known.artifact_id.clone(),
                    if_revision: known.revision_id.clone(),
                    title: Some(item.title.clone()),
                    media_type: Some(item.media_type.clone()),
                    content: ArtifactContent::Text(item.content.clone()),
                    provenance,
                    actor: self.options.actor.clone(),
                };
                let idempotency = key("rev", &[known.artifact_id.as_ref(), known.revision_id.as_ref(), &hash]);
                let ack = self.call(input, Some(idempotency), &context)?;
                self.count_artifact(ack.created, true);
                (ack.record.artifact_id, ack.record.revision_id, false)
            }
            Some(known) => {
                self.result.artifacts.unchanged += 1;
                (known.artifact_id.clone(), known.revision_id.clone(), false)
            }
        };
        let existing = match fresh {
            true => Vec::new(),
            false => index.claims.get(&artifact_id).cloned().unwrap_or_default(),
        };
        self.sync_claims(item, &artifact_id, &revision_id, existing, &context)?;
        Ok(Some(artifact_id))
    }

    /// The `artifact.put` of a new item, its idempotency key and its scope.
    fn put(&self, item: &Item) -> (ArtifactPutInput, String, AmbientContext) {
        let hash = content_hash(item);
        let mut provenance = item.provenance.clone();
        provenance.insert("import_key".to_owned(), Value::from(item.key.as_str()));
        provenance.insert("content_blake3".to_owned(), Value::from(hash.as_str()));
        let input = ArtifactPutInput {
            kind: item.kind.clone(),
            title: item.title.clone(),
            media_type: item.media_type.clone(),
            content: ArtifactContent::Text(item.content.clone()),
            provenance,
            actor: self.options.actor.clone(),
        };
        let context = scope_for(&self.options.context, item.project.as_deref());
        (input, key("put", &[&item.key, &hash]), context)
    }

    /// The `claim.assert` of one of an item's claims on a revision, and its idempotency key.
    fn assert(
        &self,
        item: &Item,
        spec: &ClaimSpec,
        artifact_id: &ArtifactId,
        revision_id: &ArtifactRevisionId,
    ) -> (ClaimAssertInput, String) {
        let idempotency = key(
            "clm",
            &[
                &item.key,
                revision_id.as_ref(),
                spec.claim_type.as_str(),
                &spec.statement,
            ],
        );
        let input = ClaimAssertInput {
            claim_type: spec.claim_type,
            statement: spec.statement.clone(),
            confidence: None,
            evidence: vec![locator(spec, artifact_id, revision_id)],
            valid_from: None,
            valid_until: None,
            actor: self.options.actor.clone(),
        };
        (input, idempotency)
    }

    fn count_artifact(&mut self, created: bool, revise: bool) {
        match (created, revise) {
            (true, false) => self.result.artifacts.created += 1,
            (true, true) => self.result.artifacts.revised += 1,
            (false, _) => self.result.artifacts.unchanged += 1,
        }
    }

    /// Brings the claims citing an artifact in line with the item (see the module docs).
    fn sync_claims(
        &mut self,
        item: &Item,
        artifact_id: &ArtifactId,
        revision_id: &ArtifactRevisionId,
        mut existing: Vec<ClaimRecord>,
        context: &AmbientContext,
    ) -> Result<(), Failed> {
        let ours = |claim: &ClaimRecord| {
            claim.evidence.len() == 1
                && claim.evidence[0].artifact_id == *artifact_id
                && claim.actor == self.options.actor
        };
        for spec in &item.claims {
            let evidence = vec![locator(spec, artifact_id, revision_id)];
            let matching = existing
                .iter()
                .position(|c| c.claim_type == spec.claim_type && c.statement == spec.statement && ours(c));
            match matching.map(|index| existing.swap_remove(index)) {
                Some(claim) if claim.evidence == evidence => self.result.claims.unchanged += 1,
                Some(claim) => {
                    let input = ClaimReviseInput {
                        claim_id: claim.claim_id.clone(),
                        if_revision: claim.revision_id.clone(),
                        statement: spec.statement.clone(),
                        confidence: claim.confidence,
                        evidence,
                        actor: self.options.actor.clone(),
                    };
                    let idempotency = key("crv", &[claim.revision_id.as_ref(), revision_id.as_ref()]);
                    self.call(input, Some(idempotency), context)?;
                    self.result.claims.revised += 1;
                }
                None => {
                    let (input, idempotency) = self.assert(item, spec, artifact_id, revision_id);
                    let ack = self.call(input, Some(idempotency), context)?;
                    if ack.created {
                        self.result.claims.created += 1;
                    } else {
                        self.result.claims.unchanged += 1;
                    }
                }
            }
        }
        for claim in existing
            .iter()
            .filter(|c| ours(c) && c.evidence[0].revision_id != *revision_id)
        {
            let input = ClaimRetractInput {
                claim_id: claim.claim_id.clone(),
                reason: format!("no longer in {}", item.file),
            };
            self.call(input, Some(key("crt", &[claim.revision_id.as_ref()])), context)?;
            self.result.claims.retracted += 1;
        }
        Ok(())
    }
}

/// The evidence of an imported claim: its span of the artifact revision.
fn locator(spec: &ClaimSpec, artifact_id: &ArtifactId, revision_id: &ArtifactRevisionId) -> EvidenceLocator {
    EvidenceLocator {
        artifact_id: artifact_id.clone(),
        revision_id: revision_id.clone(),
        start_byte: spec.span.map(|s| s.0),
        end_byte: spec.span.map(|s| s.1),
    }
}

/// The result of one response: its output, or the daemon's refusal.
fn outcome<I: Input>(response: Response) -> Result<I::Output, Failed> {
    let response = response
        .decode::<I::Output>()
        .map_err(|source| ClientError::UnexpectedResult { op: I::OP, source })?;
    match response.into_result() {
        Some(Ok(output)) => Ok(output),
        Some(Err(error)) => Err(Failed::Refused(error)),
        None => Err(Failed::Refused(ErrorBody::new(
            crate::protocol::ErrorCode::InternalError,
            "an envelope with neither result nor error",
        ))),
    }
}
