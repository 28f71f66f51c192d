//! Which kernels a bench ran on, printed and reported beside its figures: a figure depends on
//! the CPU's vector units, and `MEMBANK_SCAN_KERNEL` can pick a narrower path to compare.

use serde::Serialize;

/// The dense scan's kernel path and what each of its three kernels ran on.
#[derive(Debug, Clone, Serialize)]
pub struct ScanKernels {
    /// The path ([`membank_store::ScanPath`]'s name), e.g. `"avx512-vnni"`.
    pub path: &'static str,
    /// The best path this CPU has (the default when `MEMBANK_SCAN_KERNEL` is unset).
    pub best: &'static str,
    /// The `f32` re-rank.
    pub f32: &'static str,
    /// The int8 screening pass.
    pub int8: &'static str,
    /// The 4-bit pre-screen.
    #[serde(rename = "4-bit")]
    pub four_bit: &'static str,
}

/// The scan kernels this process runs.
pub fn scan() -> ScanKernels {
    let path = membank_store::scan_path();
    let [(_, f32), (_, int8), (_, four_bit)] = path.kernels();
    ScanKernels { path: path.name(), best: membank_store::best_scan_path().name(), f32, int8, four_bit }
}

impl std::fmt::Display for ScanKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dense scan kernels: {} (f32 {}, int8 {}, 4-bit {})", self.path, self.f32, self.int8, self.four_bit)?;
        if self.path != self.best {
            write!(f, "; this CPU's best is {}", self.best)?;
        }
        Ok(())
    }
}
