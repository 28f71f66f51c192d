//! Throw-away databases for tests and benchmarks: one per test, made on the server an
//! admin URL names (`scripts/postgres-dev.sh start` prints one) and dropped, with any
//! connection left, when the handle is dropped.
//!
//! When the admin URL's database is a Citus coordinator (`scripts/citus-dev.sh start`
//! prints one), the new database is made a cluster of its own: Citus 12.1 does not
//! propagate `CREATE DATABASE`, so it is created on the coordinator and on every active
//! worker the admin database knows (`pg_dist_node`), with the `citus` extension in each and
//! the workers added to the new database's coordinator; membank then creates its schema
//! distributed there, as on any empty Citus database. It is dropped from every node.

use std::sync::atomic::{AtomicU64, Ordering};

/// Drops its database when dropped.
pub struct TestDatabase {
    admin_url: String,
    /// On Citus, each worker's connection settings (to its `postgres` database).
    workers: Vec<postgres::Config>,
    /// The database's name.
    pub name: String,
    /// Its URL (the admin URL with this database).
    pub url: String,
    /// Whether it is a Citus cluster (the admin URL's database is a Citus coordinator).
    pub citus: bool,
}

impl TestDatabase {
    /// A new empty database on the server of `admin_url`, named after `test`; panics
    /// with the reason when the server cannot make one (it is for tests).
    pub fn create(admin_url: &str, test: &str) -> TestDatabase {
        Self::try_create(admin_url, test).unwrap_or_else(|e| {
            panic!("cannot create a test database on {}: {}", crate::redact(admin_url), describe(&e))
        })
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
        let citus: bool =
            admin.query_one("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')", &[])?.get(0);
        let mut workers = Vec::new();
        let mut coordinator = None;
        if citus {
            let base: postgres::Config = admin_url.parse()?;
            for row in admin.query(
                "SELECT nodename, nodeport, groupid = 0 FROM pg_dist_node
                  WHERE noderole = 'primary' AND isactive ORDER BY groupid",
                &[],
            )? {
                let (host, port, is_coordinator): (String, i32, bool) = (row.get(0), row.get(1), row.get(2));
                if is_coordinator {
                    coordinator = Some((host, port));
                    continue;
                }
                // A new Config: `host` and `port` on a parsed one add a host, not replace it.
                let mut config = postgres::Config::new();
                if let Some(user) = base.get_user() {
                    config.user(user);
                }
                if let Some(password) = base.get_password() {
                    config.password(password);
                }
                config.host(&host).port(u16::try_from(port).unwrap_or(5432)).dbname("postgres");
                workers.push(((host, port), config));
            }
        }
        admin.batch_execute(&format!("CREATE DATABASE {name}"))?;
        let database = TestDatabase {
            admin_url: admin_url.to_string(),
            workers: workers.iter().map(|(_, config)| config.clone()).collect(),
            url: with_database(admin_url, &name),
            name,
            citus,
        };
        if citus {
            for (_, config) in &workers {
                config.connect(postgres::NoTls)?.batch_execute(&format!("CREATE DATABASE {}", database.name))?;
                let mut config = config.clone();
                config.dbname(&database.name);
                config.connect(postgres::NoTls)?.batch_execute("CREATE EXTENSION citus")?;
            }
            let mut client = postgres::Client::connect(&database.url, postgres::NoTls)?;
            client.batch_execute("CREATE EXTENSION citus")?;
            if let Some((host, port)) = &coordinator {
                client.execute("SELECT citus_set_coordinator_host($1, $2)", &[host, port])?;
            }
            for ((host, port), _) in &workers {
                // A worker's Citus maintenance daemon, just started in the new database, may
                // update the catalog row citus_add_node does ("tuple concurrently updated"):
                // the call is one transaction, so it is tried again.
                let mut attempt = 0;
                loop {
                    match client.execute("SELECT citus_add_node($1, $2)", &[host, port]) {
                        Ok(_) => break,
                        Err(_) if attempt < 10 => {
                            attempt += 1;
                            std::thread::sleep(std::time::Duration::from_millis(100 * attempt));
                        }
                        Err(err) => return Err(err),
                    }
                }
            }
        }
        Ok(database)
    }
}

/// The active worker nodes of the Citus coordinator whose database `url` names, or `None`
/// when the database is not a Citus coordinator (no `citus` extension in it); as
/// [`TestDatabase::create`] decides to make a cluster of its own.
///
/// A URL that does not parse is [`crate::StoreError::Invalid`]; a server that cannot be
/// reached, [`crate::StoreError::Unavailable`]; a refusal by the server, the error it gave.
pub fn citus_workers(url: &str) -> Result<Option<usize>, crate::StoreError> {
    use super::PgError;
    let config: postgres::Config =
        url.parse().map_err(|e: postgres::Error| membank_core::InvalidInput::new("database URL", e.to_string()))?;
    let mut client = config.connect(postgres::NoTls).map_err(PgError::from)?;
    if !super::schema::is_citus(&mut client)? {
        return Ok(None);
    }
    let workers: i64 = client
        .query_one("SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0", &[])
        .map_err(PgError::from)?
        .get(0);
    Ok(Some(usize::try_from(workers).unwrap_or(0)))
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
        let drop_sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        match postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            Ok(mut admin) => {
                if let Err(err) = admin.batch_execute(&drop_sql) {
                    eprintln!("could not drop test database {}: {err}", self.name);
                }
            }
            Err(err) => eprintln!("could not drop test database {}: {err}", self.name),
        }
        // The coordinator's copy first: its connections to the workers' copies close with it.
        for worker in &self.workers {
            if let Err(err) = worker.connect(postgres::NoTls).and_then(|mut c| c.batch_execute(&drop_sql)) {
                eprintln!("could not drop test database {} on a Citus worker: {err}", self.name);
            }
        }
    }
}

/// An error with the server's message, which `postgres::Error`'s Display leaves out.
fn describe(err: &postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{err}: {}", db.message()),
        None => err.to_string(),
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
