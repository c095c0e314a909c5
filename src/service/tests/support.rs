//! The one harness every service test serves requests through: a request goes to
//! [`Service::handle_value`] as a transport would hand it over, and the response envelope,
//! and the result of a known operation, are checked against our hand-written schemas and,
//! when `../shared` holds it, against the reference's v0.7.1 result schemas.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::protocol::{Operation, Response, schema};
use crate::service::Service;

/// The request id a transport substitutes for an envelope that has none.
pub const TRANSPORT_REQUEST_ID: &str = "req_transport";

/// Serves `request` (a whole envelope) and checks what comes back.
pub fn checked(service: &Service, request: Value) -> Response {
    let op = request
        .get("op")
        .and_then(Value::as_str)
        .and_then(Operation::from_wire_name);
    let response = service.handle_value(request, TRANSPORT_REQUEST_ID);
    let envelope = serde_json::to_value(&response).unwrap();
    schema::validate_response(&envelope).unwrap_or_else(|v| panic!("response violates the schema: {v}\n{envelope}"));
    if let (Some(op), Some(result)) = (op, response.result.as_ref()) {
        schema::validate_result(op, result)
            .unwrap_or_else(|v| panic!("{op} result violates the schema: {v}\n{result:#}"));
        if let Some(later) = later_results().get(op.wire_name()) {
            let errors: Vec<String> = later
                .iter_errors(result)
                .map(|e| format!("{}: {e}", e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{op} result violates the reference's v0.7.1 schema: {errors:?}\n{result:#}"
            );
        }
    }
    response
}

/// An envelope for `op` with `input`: in `context` when one is given, and under `key` (a
/// fresh one when `None`) when the operation mutates.
pub fn envelope(op: &str, input: Value, context: Option<&Value>, key: Option<&str>) -> Value {
    let operation = Operation::from_wire_name(op).unwrap_or_else(|| panic!("unknown operation {op}"));
    let mut request = json!({"request_id": "req_test", "op": op, "input": input});
    if let Some(context) = context {
        request["context"] = context.clone();
    }
    if operation.is_mutating() {
        let key = key.map_or_else(|| format!("key-{}", ulid::Ulid::new()), str::to_owned);
        request["idempotency_key"] = json!(key);
    }
    request
}

/// The result of a response that must have succeeded; `request` names it in the failure.
pub fn result_of(response: Response, request: &Value) -> Value {
    let shown: String = request.to_string().chars().take(300).collect();
    assert!(response.ok, "request {shown} failed: {:?}", response.error);
    response.result.unwrap()
}

/// The warning codes of a response.
pub fn warning_codes(response: &Response) -> Vec<String> {
    response.warnings.iter().map(|w| w.code.clone()).collect()
}

/// The reference's v0.7.1 result schemas by operation, compiled once; empty without
/// `../shared` (the schema tests report that skip). A schema of that bundle that does not
/// compile (its `feedback.record`, an operation we lack) is left out.
fn later_results() -> &'static HashMap<String, jsonschema::Validator> {
    static LATER: OnceLock<HashMap<String, jsonschema::Validator>> = OnceLock::new();
    LATER.get_or_init(|| {
        let path = crate::testkit::parts::shared_dir().join("spec/reference-schema-v1-at-0.7.1.json");
        let Ok(text) = std::fs::read_to_string(path) else {
            return HashMap::new();
        };
        let bundle: Value = serde_json::from_str(&text).unwrap();
        let results = bundle["result_types"].as_object().unwrap();
        results
            .iter()
            .filter_map(|(op, schema)| {
                let validator = jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .should_validate_formats(false)
                    .build(schema)
                    .ok()?;
                Some((op.clone(), validator))
            })
            .collect()
    })
}

/// The store a `backend_test!` body runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A service on a throw-away store, and what keeps that store alive (its directory, or its
/// database in the process's shared PostgreSQL cluster, dropped with it).
pub struct TestStore {
    pub service: Service,
    keep: Keep,
}

/// What keeps a [`TestStore`]'s store alive once its service is taken out; drop it after
/// the service.
pub struct Keep {
    _dir: Option<tempfile::TempDir>,
    /// The PostgreSQL database's URL, and the front end's directory.
    database: Option<(String, Vec<tempfile::TempDir>)>,
}

impl Drop for Keep {
    fn drop(&mut self) {
        if let (Some((url, _)), Some(cluster)) = (&self.database, crate::testkit::postgres::shared_if_started()) {
            cluster.drop_database(url);
        }
    }
}

impl TestStore {
    /// A fresh store of `backend`; `None` after a visible skip when PostgreSQL is missing
    /// (never in CI, where a missing part fails: `testkit::parts`). A PostgreSQL store is a
    /// new database, migrated by template copy, in the cluster this test process shares.
    pub fn open(backend: Backend) -> Option<TestStore> {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let service = Service::open(&dir.path().join("data")).unwrap();
                Some(TestStore {
                    service,
                    keep: Keep {
                        _dir: Some(dir),
                        database: None,
                    },
                })
            }
            Backend::Postgres => {
                let cluster = crate::testkit::postgres::shared()?;
                let url = cluster.create_store_database();
                let (mut services, dirs) = crate::testkit::postgres::services(&url, 1);
                Some(TestStore {
                    service: services.pop().unwrap(),
                    keep: Keep {
                        _dir: None,
                        database: Some((url, dirs)),
                    },
                })
            }
        }
    }

    /// The service, and what keeps its store alive.
    pub fn into_parts(self) -> (Service, Keep) {
        (self.service, self.keep)
    }
}

/// One test body run on both stores, as two tests: `NAME::on_sqlite` and
/// `NAME::on_postgresql` (ripgrep's `rgtest!` is the model). The body gets a fresh
/// [`TestStore`]; on a machine without PostgreSQL the second reports its skip and passes.
///
/// ```ignore
/// backend_test!(fn a_purged_artifact_is_never_retrieved(store) {
///     let service = &store.service;
///     // …
/// });
/// ```
macro_rules! backend_test {
    ($(#[$meta:meta])* fn $name:ident($store:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use crate::service::tests::support::{Backend, TestStore};

            fn body($store: TestStore) $body

            #[test]
            fn on_sqlite() {
                body(TestStore::open(Backend::Sqlite).expect("a SQLite store opens"));
            }

            #[test]
            fn on_postgresql() {
                if let Some(store) = TestStore::open(Backend::Postgres) {
                    body(store);
                }
            }
        }
    };
}

/// A temporary service every topic's tests build on, served through [`checked`]: the store,
/// a counter for fresh idempotency keys, and the generic calls. Each topic's `support.rs`
/// adds its own request builders in an `impl Fixture` block of its own.
pub struct Fixture {
    _dir: Option<tempfile::TempDir>,
    pub service: Service,
    next_key: std::cell::Cell<u64>,
    /// The store of a fixture made [`Fixture::on`] a `backend_test!` store (after `service`:
    /// it outlives it).
    _keep: Option<Keep>,
}

/// A fixture on a fresh embedded store in a temporary directory.
pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::open(&dir.path().join("data")).unwrap();
    Fixture::with(Some(dir), service, 0, None)
}

/// A fixture whose service runs as `runtime` says (a semantic model, say).
pub fn fixture_with(runtime: crate::service::Runtime) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open(&dir.path().join("data")).unwrap();
    Fixture::with(Some(dir), Service::new(store, runtime), 0, None)
}

impl Fixture {
    fn with(dir: Option<tempfile::TempDir>, service: Service, first_key: u64, keep: Option<Keep>) -> Fixture {
        Fixture {
            _dir: dir,
            service,
            next_key: std::cell::Cell::new(first_key),
            _keep: keep,
        }
    }

    /// A fixture on a `backend_test!` store.
    pub fn on(store: TestStore) -> Fixture {
        let (service, keep) = store.into_parts();
        Fixture::with(None, service, 0, Some(keep))
    }

    /// A fixture over an existing service (a PostgreSQL front end, say).
    pub fn over(service: Service) -> Fixture {
        Fixture::with(None, service, 0, None)
    }

    /// Another service on this fixture's store, running as `runtime` says (the same data
    /// served with and without a model, say); its keys never meet this fixture's.
    pub fn sharing(&self, runtime: crate::service::Runtime) -> Fixture {
        Fixture::with(
            None,
            Service::new(self.service.store().clone(), runtime),
            1_000_000,
            None,
        )
    }

    /// A fresh idempotency key.
    pub fn key(&self) -> String {
        let n = self.next_key.get() + 1;
        self.next_key.set(n);
        format!("key-{n}")
    }

    /// Serves a request and validates the envelope and the result against the schemas.
    pub fn call(&self, request: Value) -> Response {
        checked(&self.service, request)
    }

    /// The result of a request that must succeed.
    pub fn ok(&self, request: Value) -> Value {
        let response = self.call(request.clone());
        assert!(response.ok, "request {request} failed: {:?}", response.error);
        response.result.unwrap()
    }

    /// The error of a request that must fail.
    pub fn err(&self, request: Value) -> crate::protocol::ErrorBody {
        let response = self.call(request.clone());
        assert!(!response.ok, "request {request} unexpectedly succeeded");
        response.error.unwrap()
    }

    /// One integer a SQL query over the store returns.
    pub fn count(&self, sql: &str) -> i64 {
        self.service
            .store()
            .read_db(|db| db.query_one(sql, &[], |r| r.get(0)))
            .unwrap()
    }

    pub fn last_commit_seq(&self) -> i64 {
        self.service.store().last_commit_seq().unwrap()
    }
}

/// The values of `name` across the items of an array.
pub fn field(items: &Value, name: &str) -> Vec<Value> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[name].clone())
        .collect()
}
