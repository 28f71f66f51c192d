//! Throw-away databases for tests and benchmarks: one per test, made on the server an
//! admin URL names (`scripts/postgres-dev.sh start` prints one) and dropped, with any
//! connection left, when the handle is dropped.

use std::sync::atomic::{AtomicU64, Ordering};

/// Drops its database when dropped.
pub struct TestDatabase {
    admin_url: String,
    /// The database's name.
    pub name: String,
    /// Its URL (the admin URL with this database).
    pub url: String,
}

impl TestDatabase {
    /// A new empty database on the server of `admin_url`, named after `test`; panics
    /// with the reason when the server cannot make one (it is for tests).
    pub fn create(admin_url: &str, test: &str) -> TestDatabase {
        Self::try_create(admin_url, test)
            .unwrap_or_else(|e| panic!("cannot create a test database on {}: {e}", crate::redact(admin_url)))
    }

    /// [`TestDatabase::create`], with the failure as an error.
    pub fn try_create(admin_url: &str, test: &str) -> Result<TestDatabase, postgres::Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tag: String = test
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(30)
            .collect::<String>()
            .to_ascii_lowercase();
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let name = format!("mbt_{tag}_{}_{}_{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut admin = postgres::Client::connect(admin_url, postgres::NoTls)?;
        admin.batch_execute(&format!("CREATE DATABASE {name}"))?;
        Ok(TestDatabase { admin_url: admin_url.to_string(), url: with_database(admin_url, &name), name })
    }
}

impl TestDatabase {
    /// Keeps the database on the server (it is not dropped with this handle), as a
    /// benchmark's dataset kept between runs is; returns its name.
    pub fn keep(self) -> String {
        let kept = std::mem::ManuallyDrop::new(self);
        kept.name.clone()
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            Ok(mut admin) => {
                if let Err(err) = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)) {
                    eprintln!("could not drop test database {}: {err}", self.name);
                }
            }
            Err(err) => eprintln!("could not drop test database {}: {err}", self.name),
        }
    }
}

/// `url` (a `postgres://` URL) naming database `name` instead of its own.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[after_scheme..].find('/').map_or(base.len(), |i| after_scheme + i);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}
