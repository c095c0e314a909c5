//! The seeded corpora (issue 13): a synthetic vocabulary of English function words, 300
//! common words (starting with `c`) and `n/5` topic words, documents drawn from it, and the
//! cache under `target/retrieval-bench/` keyed by size and generator version. Seeding goes
//! through the store's own mutation functions in large transactions, and measures the
//! stopped store on disk (`disk.rs`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use memoree::protocol::claim::ClaimType;
use memoree::store::Store;
use memoree::store::artifact::{self, BlobRef, NewRevision};
use memoree::store::claim::{self, EvidenceRef, NewClaimRevision};
use memoree::store::scope::Owner;

use super::disk;
use super::rng::Rng;

/// Bump when the generator changes so cached corpora are rebuilt.
const CORPUS_VERSION: u32 = 5;
const COMMON_WORDS: usize = 300;
pub const TOPIC_WORDS_PER_DOC: usize = 10;
/// English function words mixed into every document (about a third of its words).
pub const FUNCTION_WORDS: [&str; 16] = [
    "the", "a", "of", "to", "in", "is", "and", "for", "on", "that", "with", "as", "by", "it", "this", "be",
];
/// First letters of topic words: anything but `c`, which marks the common words.
const TOPIC_INITIALS: &[u8] = b"bdfghjklmnprstvwz";

/// A pronounceable word for index `i` in a tier (`c` common, `t` topic: its first letter
/// varies, like a real vocabulary's). Topic words have at least two syllables (five
/// letters), so every corpus size has topic words long enough for the query classes: a typo
/// in a three-letter word is not one a reader would correct.
fn word(tier: char, mut i: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "fu", "gi", "ho", "ja", "pe", "qu", "zo",
    ];
    let mut out = String::new();
    if tier == 't' {
        out.push(TOPIC_INITIALS[i % TOPIC_INITIALS.len()] as char);
        i /= TOPIC_INITIALS.len();
    } else {
        out.push(tier);
    }
    let min_syllables = if tier == 't' { 2 } else { 1 };
    let mut syllables = 0;
    loop {
        out.push_str(SYLLABLES[i % 16]);
        syllables += 1;
        i /= 16;
        if i == 0 && syllables >= min_syllables {
            break;
        }
    }
    out
}

pub struct Vocabulary {
    topics: usize,
}

impl Vocabulary {
    pub fn for_size(size: usize) -> Vocabulary {
        Vocabulary {
            topics: (size / 5).max(200),
        }
    }

    fn common(&self, rng: &mut Rng) -> String {
        // Skewed toward the first words, like function words.
        let i = rng.below(COMMON_WORDS).min(rng.below(COMMON_WORDS));
        word('c', i)
    }

    fn topic(&self, rng: &mut Rng) -> String {
        word('t', rng.below(self.topics))
    }

    /// `words` words: function words and common words, with `topics` topic words spread
    /// through.
    pub fn text(&self, rng: &mut Rng, words: usize, topics: usize) -> String {
        let mut out: Vec<String> = (0..words)
            .map(|_| {
                if rng.below(3) == 0 {
                    FUNCTION_WORDS[rng.below(FUNCTION_WORDS.len())].to_owned()
                } else {
                    self.common(rng)
                }
            })
            .collect();
        for _ in 0..topics {
            let at = rng.below(out.len());
            out[at] = self.topic(rng);
        }
        let mut text = out.join(" ");
        text.push('.');
        text
    }
}

fn owner(project: &str) -> Owner {
    Owner {
        workspace_id: "wsp_bench".to_owned(),
        project_id: project.to_owned(),
        task_id: None,
        component: None,
    }
}

fn cache_root() -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("retrieval-bench")
}

/// Opens the cached corpus of `size` artifacts, seeding it first if needed.
pub fn corpus(size: usize) -> Store {
    let dir = cache_root().join(format!("v{CORPUS_VERSION}-n{size}"));
    let marker = dir.join("seeded");
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let started = Instant::now();
        let raw = seed(&dir.join("data"), size);
        std::fs::write(&marker, disk::measure(&dir.join("data"), size, raw)).unwrap();
        println!("seeded {size} artifacts in {:.1}s", started.elapsed().as_secs_f64());
    }
    disk::print(&std::fs::read_to_string(&marker).unwrap_or_default(), size);
    Store::open(&dir.join("data")).unwrap()
}

/// Seeds the corpus; returns the text bytes stored (bodies, titles and claim statements).
fn seed(data: &Path, size: usize) -> u64 {
    let store = Store::open(data).unwrap();
    let mut raw = 0u64;
    let vocabulary = Vocabulary::for_size(size);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ size as u64);
    const BATCH: usize = 5000;
    let mut done = 0;
    while done < size {
        let count = BATCH.min(size - done);
        let docs: Vec<(String, NewRevision, Vec<NewClaimRevision>, &'static str)> = (0..count)
            .map(|i| {
                let title = vocabulary.text(&mut rng, 5, 1);
                let length = 80 + rng.below(120);
                let body = vocabulary.text(&mut rng, length, TOPIC_WORDS_PER_DOC);
                let kind = ["note", "decision", "runbook", "session-log"][rng.below(4)];
                let project = if (done + i) % 10 == 9 {
                    "prj_sibling"
                } else {
                    "prj_bench"
                };
                raw += (title.len() + body.len()) as u64;
                let claims = if (done + i) % 10 == 0 {
                    let statement = vocabulary.text(&mut rng, 12, 3);
                    raw += statement.len() as u64;
                    vec![NewClaimRevision {
                        statement,
                        confidence: None,
                        evidence: Vec::new(),
                        actor: None,
                        vectors: None,
                    }]
                } else {
                    Vec::new()
                };
                let bytes = body.into_bytes();
                let new = NewRevision {
                    title,
                    media_type: "text/markdown".to_owned(),
                    blob: BlobRef::inline(&bytes),
                    content: bytes,
                    provenance_json: "{}".to_owned(),
                    actor: None,
                    vectors: None,
                };
                (kind.to_owned(), new, claims, project)
            })
            .collect();
        store
            .write(move |tx| {
                for (kind, new, claims, project) in docs {
                    let (row, _) = artifact::put(tx, &owner(project), &kind, &new)?;
                    for mut new_claim in claims {
                        new_claim.evidence = vec![EvidenceRef {
                            artifact_id: row.artifact_id.clone(),
                            revision_id: row.revision_id.clone(),
                            start_byte: Some(0),
                            end_byte: Some(20),
                        }];
                        claim::assert(tx, &owner(project), ClaimType::Fact, &new_claim, None, None)?;
                    }
                }
                Ok(())
            })
            .unwrap();
        done += count;
    }
    store
        .exclusive(|conn| Ok(conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE;")?))
        .unwrap();
    store.shutdown();
    raw
}
