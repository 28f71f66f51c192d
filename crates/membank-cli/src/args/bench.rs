//! Flags of `bench …`, the speed measurements, with the bounds every count flag shares.

use std::path::PathBuf;

use clap::builder::RangedU64ValueParser;
use clap::{Args, Subcommand};

/// Largest `--n` of `bench embed`, `--queries`, `--requests`, `--users` and `--per-user`:
/// far above any useful run, low enough that a typo cannot ask for days of work.
pub(crate) const MAX_COUNT: u64 = 10_000_000;

/// A count flag between 1 and `max`.
pub(crate) fn count(max: u64) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::<usize>::new().range(1..=max)
}

/// Which benchmark. With `--json`, each prints one JSON object instead of its table; its
/// shape is given in each benchmark's `--help`.
#[derive(Debug, Subcommand)]
#[command(
    after_help = "Every benchmark takes --json: one JSON object instead of the table, {\"benchmark\": \"embed\"|\"recall\"|\"http\"|\"sweep\"|\"cache\"|\"erase\"|\"maintain\", …, \"results\": [one object per row]}; `membank bench <COMMAND> --help` gives each shape. Progress goes to standard error."
)]
pub enum BenchCommand {
    /// Embedding throughput (sentences/s).
    ///
    /// With --json: {"benchmark": "embed", "model", "source", "sentences", "words", "runs",
    /// "results": [{"threads", "sentences_per_second", "seconds", "sentences_per_cpu_second"
    /// (null where the process CPU time cannot be read), "run_rates": [sentences/s of each
    /// run]}]}; rates are medians of the runs.
    Embed {
        /// Number of sentences.
        #[arg(long, default_value_t = 2000, value_parser = count(MAX_COUNT))]
        n: usize,
        /// Thread counts to measure, comma-separated. (Not `--threads`: that is the global
        /// number of threads, and clap panicked on the clash of the two.)
        #[arg(long = "thread-counts", id = "thread_counts", value_delimiter = ',', default_value = "1,2", value_parser = count(256))]
        threads: Vec<usize>,
        /// Runs per thread count (the median is reported).
        #[arg(long, default_value_t = 3, value_parser = count(1000))]
        runs: usize,
        /// Public data folder (sentences come from MemoryBank and LoCoMo).
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
        /// Embed the first N lines of this UTF-8 file instead, one sentence per line (the
        /// file `bench/embed/compare.sh` gives PyTorch too). Blank lines are refused.
        #[arg(long, conflicts_with = "data")]
        sentences: Option<PathBuf>,
    },
    /// Recall latency for one user at several store sizes.
    ///
    /// With --json: {"benchmark": "recall", "model", "k", "queries", "results": [{"memories",
    /// "built" (memories added to the cached database by this run), "total", "no_embed",
    /// "dense", "dense_exact", "dense_recall", "bm25", "embed", "cache_bytes"}]}; "total" to
    /// "embed" are each {"p50_ms", "p95_ms", "p99_ms"}: the engine's whole recall, search
    /// and fetch without embedding, the dense scan alone (top 50; 4-bit pre-screen from 20k
    /// memories), the same scan with the proven-exact screening only, BM25 alone, and
    /// embedding the query alone; "dense_recall" is the share of the exact scan's top 50 the
    /// default scan returned; "cache_bytes" is {"vectors", "terms"}: what the user's entries
    /// in the two search caches are charged.
    Recall {
        /// Store sizes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000", value_parser = count(MAX_COUNT))]
        sizes: Vec<usize>,
        /// Queries per size (fewer if the data has fewer sentences: one query per 7).
        #[arg(long, default_value_t = 200, value_parser = count(MAX_COUNT))]
        queries: usize,
        /// Where to keep the built databases (reused when present).
        #[arg(long, default_value = "target/bench")]
        dir: PathBuf,
        /// Public data folder.
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
    },
    /// Recall latency over real HTTP on loopback (query embedding included), 1 and N clients.
    ///
    /// With a postgres:// --db, SQLite and PostgreSQL on the same data in the same run (the
    /// SQLite dataset copied into a database of that server, kept between runs), taking
    /// turns at each level on the same queries; then ingestion on both (--ingest). On
    /// SQLite with the local model, the two query paths side by side instead: the default
    /// (int8 query weights, micro-batched, as `serve` runs) and the reference (f32 weights,
    /// each query alone), one server each, taking turns on the same queries.
    ///
    /// With --json: {"benchmark": "http", "model", "model_threads" (null for a remote
    /// embedder), "memories", "k", "results": [{"clients", "strengthen", "requests",
    /// "latency": {"p50_ms", "p95_ms", "p99_ms"}, "recalls_per_second"}]}. With a
    /// postgres:// --db each result also has "backend" ("sqlite" | "postgres"), and the
    /// report has "ratios": [{"clients", "strengthen", "p50", "p95"}] (PostgreSQL's over
    /// SQLite's), "datasets": [{"backend", "location", "added" (memories this run built or
    /// copied), "seconds", "memories_per_second"}] and "ingest": [{"backend", "path"
    /// ("remember" | "insert"), "memories", "seconds", "memories_per_second", "latency"}].
    /// The report has "query_batch" and "query_batch_wait_us" (the servers' micro-batcher).
    /// On SQLite with the local model each result has "query_path" ("int8-batched" |
    /// "f32"; "f32-batched" when --query-precision f32 is configured; "-unbatched" instead
    /// of "-batched" with --query-batch 1) and the report
    /// "path_ratios": [{"clients", "strengthen", "p50", "p95"}] (the f32 path's over the
    /// default's).
    Http(HttpArgs),
    /// Scale-out: many users' recall and ingestion on SQLite, PostgreSQL and a Citus
    /// cluster, in the same run.
    ///
    /// The SQLite dataset of --users × --per-user memories is `bench cache`'s (built once in
    /// --dir, real vectors). `membank migrate` copies it into a new database of the
    /// --postgres server and of the --citus coordinator (kept between runs, found again
    /// through a record in --dir, unless --no-keep), timed. One server per backend on
    /// 127.0.0.1:0, in this process; each request recalls a user drawn across all of them.
    /// First every user is recalled once (the caches load it: "first_touch"), then at each
    /// --clients level the backends take turns in blocks (A B C C B A) on the same users and
    /// queries. Then ingestion: --ingest turns per backend through `POST /turns` at each
    /// level, into scratch stores dropped at the end.
    ///
    /// With --json: {"benchmark": "scale", "model", "users", "per_user", "k",
    /// "cache_budget_bytes", "kernels", "scan_kernels", "backends": [{"backend" ("sqlite" |
    /// "postgres" | "citus"), "location", "workers" (Citus: active workers; else null)}],
    /// "datasets": [{"backend", "location", "added", "seconds", "memories_per_second"}]
    /// (SQLite: the build; the others: `migrate`), "first_touch" and "results": [{"backend",
    /// "clients", "requests", "latency": {"p50_ms", "p95_ms", "p99_ms"},
    /// "recalls_per_second"}], "cache": [{"backend", "hits", "misses", "evictions"}],
    /// "ingest": [{"backend", "clients", "turns", "seconds", "turns_per_second",
    /// "latency"}]}.
    Scale(ScaleArgs),
    /// Sweep time over many users.
    ///
    /// With --json: {"benchmark": "sweep", "users", "per_user", "built" (whether this run
    /// built the database), "results": [{"dry_run", "examined", "archived", "seconds",
    /// "memories_per_second", "ms_per_user"}]}: a dry run, then the real sweep.
    Sweep {
        /// Users.
        #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
        users: usize,
        /// Memories per user.
        #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
        per_user: usize,
        /// Where to keep the built database (reused when present).
        #[arg(long, default_value = "target/bench")]
        dir: PathBuf,
    },
    /// Memory of the search caches over many users under the budget (--cache-mb).
    ///
    /// With a postgres:// --db, the PostgreSQL store too (its caches under the same budget),
    /// on the same users.
    ///
    /// With --json: {"benchmark": "cache", "model", "users", "per_user", "built",
    /// "budget_bytes", "per_user_bytes": {"vectors", "terms"} (one user's entries alone),
    /// "baseline" (resident memory before the first search), "results": [{"pass",
    /// "searches", "seconds", "cache": {"bytes", "vectors_users", "terms_users", "hits",
    /// "misses", "evictions"}, "rss"}]}; "baseline" and each "rss" are {"vm_rss_mb",
    /// "rss_anon_mb", "rss_file_mb", "vm_hwm_mb"} from /proc/self/status (null elsewhere
    /// than Linux). With a postgres:// --db (the SQLite database copied into a database of
    /// that server, kept between runs): {"benchmark": "cache", "model", "users", "per_user",
    /// "budget_bytes", "datasets": [{"backend", "location", "added", "seconds",
    /// "memories_per_second"}], "backends": [the object above with "backend", for SQLite
    /// then PostgreSQL, each measured in a process of its own]}.
    Cache(CacheArgs),
    /// One maintenance cycle's time and peak memory, dry run and real, on three shapes.
    ///
    /// "long": one user with --long memories of about --long-bytes of text each;
    /// "similar": one user with --similar turns sharing a 4 KB prefix, with near-identical
    /// vectors (the shape that made duplicate detection quadratic); "short": one user with
    /// --short memories of one sentence each. Vectors are synthetic
    /// (no model is needed); each database is built once in --dir and each cycle runs on a
    /// fresh copy. No LLM is configured.
    ///
    /// With --json: {"benchmark": "maintain", "results": [{"shape", "memories",
    /// "text_bytes", "dry_run", "seconds", "peak_rss_mb", "peak_anon_mb", "rss_before_mb",
    /// "anon_before_mb" (MiB, from /proc/self/status; null elsewhere; anon excludes the
    /// database file's mapped pages), "merged", "archived", "deferred", "skipped"}]}.
    Maintain {
        /// Memories of the "long" user.
        #[arg(long, default_value_t = 20_000, value_parser = count(MAX_COUNT))]
        long: usize,
        /// Bytes of text per "long" memory.
        #[arg(long, default_value_t = 10_000, value_parser = count(100_000))]
        long_bytes: usize,
        /// Turns of the "similar" user.
        #[arg(long, default_value_t = 2_000, value_parser = count(MAX_COUNT))]
        similar: usize,
        /// Memories of the "short" user (one sentence each).
        #[arg(long, default_value_t = 100_000, value_parser = count(MAX_COUNT))]
        short: usize,
        /// Run one shape only: long, similar or short (each shape in its own process
        /// gives each its own peak memory).
        #[arg(long, value_parser = ["long", "similar", "short"])]
        only: Option<String>,
        /// Where to keep the built databases (reused when present).
        #[arg(long, default_value = "target/bench")]
        dir: PathBuf,
        /// Public data folder (the texts).
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
    },
    /// Erasure time on a large SQLite store, and another user's write latency meanwhile.
    ///
    /// Builds each size once (kept in --dir; texts are real utterances, joined in pairs
    /// once single ones run out), then erases one memory of a different user --erases
    /// times while another user writes notes back to back. Each run erases from the kept
    /// database.
    ///
    /// With --json: {"benchmark": "erase", "users", "results": [{"memories", "built",
    /// "file_bytes", "index_bytes" (the full-text index's segments), "erases", "erase":
    /// {"p50_ms", "p95_ms", "p99_ms"}, "erase_max_ms", "writer_during_erase" and
    /// "writer_alone": {"writes", "latency": {"p50_ms", "p95_ms", "p99_ms"}, "max_ms"},
    /// "full_index_merge_ms" (one FTS5 optimize of the whole index on this store, which
    /// every erasure ran before erasure removed only the erased row's terms)}]}.
    Erase {
        /// Store sizes (memories), comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "100000,1000000", value_parser = count(MAX_COUNT))]
        sizes: Vec<usize>,
        /// Users the memories are spread over.
        #[arg(long, default_value_t = 100, value_parser = count(MAX_COUNT))]
        users: usize,
        /// Erasures per size.
        #[arg(long, default_value_t = 20, value_parser = count(100_000))]
        erases: usize,
        /// Where to keep the built databases (reused when present).
        #[arg(long, default_value = "target/bench")]
        dir: PathBuf,
        /// Public data folder (the texts).
        #[arg(long, default_value = "../shared/data")]
        data: PathBuf,
    },
}

/// `bench http`.
#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Memories of the bench user.
    #[arg(long, default_value_t = 100_000, value_parser = count(MAX_COUNT))]
    pub memories: usize,
    /// Client concurrencies, comma-separated (each 1 to 256).
    #[arg(long, value_delimiter = ',', default_value = "1,32", value_parser = count(256))]
    pub clients: Vec<usize>,
    /// Requests per concurrency level (spread over the clients; at least 10 per client),
    /// for each backend.
    #[arg(long, default_value_t = 300, value_parser = count(MAX_COUNT))]
    pub requests: usize,
    /// k of each recall.
    #[arg(long, default_value_t = 10, value_parser = count(membank_engine::core::limits::MAX_RECALL_K as u64))]
    pub k: usize,
    /// Also measure recalls that strengthen what they return (one small write each).
    #[arg(long)]
    pub strengthen: bool,
    /// Where to keep the built database (shared with `bench recall`, reused when present),
    /// and with a postgres:// --db the record of which database of that server holds the
    /// PostgreSQL copy.
    #[arg(long, default_value = "target/bench")]
    pub dir: PathBuf,
    /// Embed only this many distinct texts (0: all 4,000 sentences read from the data);
    /// every further memory is a pair of them with the normalised sum of their vectors,
    /// as in `bench recall`. The scan and index sizes are the same.
    #[arg(long, default_value_t = 0)]
    pub distinct: usize,
    /// With a postgres:// --db: memories to ingest one at a time on each backend, through
    /// the engine's remember and through the store's insert (0: skip).
    #[arg(long, default_value_t = 200, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=100_000))]
    pub ingest: usize,
    /// Public data folder (texts of memories and queries).
    #[arg(long, default_value = "../shared/data")]
    pub data: PathBuf,
    /// The servers' micro-batcher, as `serve --query-batch`: most queries in one forward
    /// pass (1: each query alone, no batcher).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub query_batch: u16,
    /// As `serve --query-batch-wait-us`: microseconds the batcher waits for more queries
    /// after the first of a batch.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub query_batch_wait_us: u32,
}

/// `bench scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Users.
    #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
    pub users: usize,
    /// Memories per user.
    #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
    pub per_user: usize,
    /// A PostgreSQL server (postgres://…) to measure: the dataset goes into a new database
    /// of it.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// A Citus coordinator (postgres://…, `scripts/citus-dev.sh start` prints one) to
    /// measure: the dataset goes into a new database made a cluster of the same nodes.
    #[arg(long, value_name = "URL")]
    pub citus: Option<String>,
    /// Client concurrencies, comma-separated (each 1 to 256).
    #[arg(long, value_delimiter = ',', default_value = "1,32", value_parser = count(256))]
    pub clients: Vec<usize>,
    /// Recalls per concurrency level and backend (spread over the clients; at least 10 per
    /// client).
    #[arg(long, default_value_t = 400, value_parser = count(MAX_COUNT))]
    pub requests: usize,
    /// k of each recall.
    #[arg(long, default_value_t = 10, value_parser = count(membank_engine::core::limits::MAX_RECALL_K as u64))]
    pub k: usize,
    /// Turns stored per concurrency level and backend (0: skip ingestion).
    #[arg(long, default_value_t = 400, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=100_000))]
    pub ingest: usize,
    /// Drop the PostgreSQL and Citus copies at the end instead of keeping them for the
    /// next run (which then migrates again).
    #[arg(long)]
    pub no_keep: bool,
    /// Where to keep the SQLite dataset and the records of the kept copies.
    #[arg(long, default_value = "target/bench")]
    pub dir: PathBuf,
    /// Public data folder (texts of memories and queries).
    #[arg(long, default_value = "../shared/data")]
    pub data: PathBuf,
}

/// `bench cache`.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// Users.
    #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
    pub users: usize,
    /// Memories per user.
    #[arg(long, default_value_t = 1000, value_parser = count(MAX_COUNT))]
    pub per_user: usize,
    /// Passes over every user.
    #[arg(long, default_value_t = 2, value_parser = count(1000))]
    pub passes: usize,
    /// Threads searching at once (as a server's blocking pool would).
    #[arg(long, default_value_t = 4, value_parser = count(256))]
    pub clients: usize,
    /// Where to keep the built database (reused when present).
    #[arg(long, default_value = "target/bench")]
    pub dir: PathBuf,
    /// Public data folder (texts of memories and queries).
    #[arg(long, default_value = "../shared/data")]
    pub data: PathBuf,
    /// Measure only this backend, in this process, on datasets already made: how a run
    /// with a postgres:// --db runs itself once per backend.
    #[arg(long, hide = true, value_parser = ["sqlite", "postgres"])]
    pub only: Option<String>,
}
