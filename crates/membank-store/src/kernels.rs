//! The dense scan's numeric kernels: an `f32` dot product, the int8 screening pass (each
//! row's `i8` codes against the query quantised to `i16`, summed exactly in `i32`), and the
//! 4-bit pre-screen of large users (two codes a byte, the same exact integer sum). Each has
//! a portable variant and variants for AVX2, AVX-VNNI, AVX-512 and AVX-512 VNNI
//! ([`ScanPath`]); the process picks the best its CPU has once, at the first scan, and logs
//! it, so one binary runs everywhere and uses the widest integer dot products it can.
//!
//! This is the one module of the store allowed `unsafe`: calling a function compiled for a
//! CPU feature is only sound on a CPU that has it, which [`ScanPath::checked`] proves once,
//! and the intrinsic kernels load through raw pointers, inside bounds their callers assert.

/// The scale that maps a row's largest magnitude to 127.
pub(crate) fn quantise_scale(row: &[f32]) -> f32 {
    row.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0
}

/// `x / scale` rounded to the nearest `i8` step (0 for an all-zero row).
pub(crate) fn quantise(x: f32, scale: f32) -> i8 {
    if scale > 0.0 { round_clamp(x / scale, 127) as i8 } else { 0 }
}

/// `x` rounded to the nearest integer, halves away from zero, and clamped to `±limit`,
/// without the libm call `f32::round` is on the baseline target (SSE2 has no rounding
/// instruction): add ±0.5, then the truncating conversion. It differs from `round` only
/// just below a half (0.49999997 + 0.5 rounds up to 1.0 in `f32`), where the result is off
/// by half a step plus one ulp — inside the float slack every error bound here carries.
/// A user's first search quantises every one of its rows, and `roundf` was 7% of that.
#[inline(always)]
pub(crate) fn round_clamp(x: f32, limit: i32) -> i32 {
    ((x + 0.5f32.copysign(x)) as i32).clamp(-limit, limit)
}

/// The instruction sets a scan kernel runs on. One is chosen per process, the best this CPU
/// has ([`scan_path`]), and each of the three kernels runs its variant for it:
///
/// | path | `f32` dot | int8 rows (`i8` × `i16`) | 4-bit rows (`u4` × `i8`) |
/// |---|---|---|---|
/// | `portable` | baseline target | baseline target | baseline target |
/// | `avx2` | 8 lanes, FMA | `vpmaddwd` (compiler) | `vpmaddubsw` + `vpmaddwd` |
/// | `avx-vnni` | as `avx2` | `vpdpwssd`, 256-bit | `vpdpbusd`, 256-bit |
/// | `avx512` | 16 lanes, FMA | `vpmaddwd`, 512-bit | `vpmaddubsw` + `vpmaddwd`, 512-bit |
/// | `avx512-vnni` | 16 lanes, FMA | `vpdpwssd`, 512-bit | `vpdpbusd`, 512-bit |
///
/// Every integer variant computes the same exact sum, so the int8 and 4-bit scores are
/// identical on every path; the `f32` dot differs only in the order of its roundings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanPath {
    /// The baseline target's code (SSE2 on x86-64), vectorised by the compiler.
    Portable,
    /// AVX2 with FMA, 256-bit.
    Avx2,
    /// AVX2 with AVX-VNNI's 256-bit integer dot products.
    AvxVnni,
    /// AVX-512F and AVX-512BW, 512-bit.
    Avx512,
    /// AVX-512 with AVX-512 VNNI's integer dot products.
    Avx512Vnni,
}

impl ScanPath {
    /// Every path, from the baseline up.
    pub const ALL: [ScanPath; 5] =
        [ScanPath::Portable, ScanPath::Avx2, ScanPath::AvxVnni, ScanPath::Avx512, ScanPath::Avx512Vnni];

    /// The name `MEMBANK_SCAN_KERNEL` takes and the benches print.
    pub fn name(self) -> &'static str {
        match self {
            ScanPath::Portable => "portable",
            ScanPath::Avx2 => "avx2",
            ScanPath::AvxVnni => "avx-vnni",
            ScanPath::Avx512 => "avx512",
            ScanPath::Avx512Vnni => "avx512-vnni",
        }
    }

    /// The path named `name` ([`ScanPath::name`]).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name.trim())
    }

    /// What each kernel runs on this path: `[("f32", …), ("int8", …), ("4-bit", …)]`.
    pub fn kernels(self) -> [(&'static str, &'static str); 3] {
        match self {
            ScanPath::Portable => [("f32", "portable"), ("int8", "portable"), ("4-bit", "portable")],
            ScanPath::Avx2 => [("f32", "avx2+fma"), ("int8", "avx2 vpmaddwd"), ("4-bit", "avx2 vpmaddubsw")],
            ScanPath::AvxVnni => [("f32", "avx2+fma"), ("int8", "avx-vnni vpdpwssd"), ("4-bit", "avx-vnni vpdpbusd")],
            ScanPath::Avx512 => [("f32", "avx512f"), ("int8", "avx512bw vpmaddwd"), ("4-bit", "avx512bw vpmaddubsw")],
            ScanPath::Avx512Vnni => {
                [("f32", "avx512f"), ("int8", "avx512-vnni vpdpwssd"), ("4-bit", "avx512-vnni vpdpbusd")]
            }
        }
    }

    /// The first CPU feature this path needs that this CPU lacks (`None`: it can run).
    pub fn missing_feature(self) -> Option<&'static str> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let needs: &[(&str, bool)] = match self {
                ScanPath::Portable => &[],
                ScanPath::Avx2 => &[("avx2", has!("avx2")), ("fma", has!("fma"))],
                ScanPath::AvxVnni => &[("avx2", has!("avx2")), ("fma", has!("fma")), ("avxvnni", has!("avxvnni"))],
                ScanPath::Avx512 => &[("avx512f", has!("avx512f")), ("avx512bw", has!("avx512bw"))],
                ScanPath::Avx512Vnni => {
                    &[("avx512f", has!("avx512f")), ("avx512bw", has!("avx512bw")), ("avx512vnni", has!("avx512vnni"))]
                }
            };
            needs.iter().find(|(_, present)| !present).map(|(name, _)| *name)
        }
        #[cfg(not(target_arch = "x86_64"))]
        match self {
            ScanPath::Portable => None,
            ScanPath::Avx2 | ScanPath::AvxVnni => Some("x86-64 avx2"),
            ScanPath::Avx512 | ScanPath::Avx512Vnni => Some("x86-64 avx512f"),
        }
    }

    /// This path, proven runnable on this CPU.
    pub(crate) fn checked(self) -> Option<Checked> {
        self.missing_feature().is_none().then_some(Checked(self))
    }
}

impl std::fmt::Display for ScanPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A [`ScanPath`] this CPU has (only [`ScanPath::checked`] makes one), so the kernels can
/// call its `target_feature` functions without checking again on every row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked(ScanPath);

/// The environment variable that forces a scan path (for benchmarks and comparisons); a
/// path the CPU lacks, or an unknown name, is logged and ignored.
pub const SCAN_KERNEL_ENV: &str = "MEMBANK_SCAN_KERNEL";

/// The best path this CPU has: AVX-512 with VNNI, then AVX-512, AVX-VNNI, AVX2, portable.
/// On the machines measured, the 512-bit paths were the fastest where present (`membank
/// bench recall` prints the path; `MEMBANK_SCAN_KERNEL` compares them).
pub fn best_scan_path() -> ScanPath {
    [ScanPath::Avx512Vnni, ScanPath::Avx512, ScanPath::AvxVnni, ScanPath::Avx2]
        .into_iter()
        .find(|p| p.missing_feature().is_none())
        .unwrap_or(ScanPath::Portable)
}

static CHOSEN: std::sync::OnceLock<Checked> = std::sync::OnceLock::new();

/// The path this process's scans run on: [`best_scan_path`], or `MEMBANK_SCAN_KERNEL` when
/// it names one this CPU has. Chosen once, and logged once.
pub fn scan_path() -> ScanPath {
    chosen().0
}

fn chosen() -> Checked {
    *CHOSEN.get_or_init(|| {
        let best = best_scan_path();
        let mut path = best;
        if let Ok(wanted) = std::env::var(SCAN_KERNEL_ENV) {
            match ScanPath::parse(&wanted) {
                Some(p) => match p.missing_feature() {
                    None => path = p,
                    Some(feature) => tracing::warn!(
                        "{SCAN_KERNEL_ENV}={wanted}: this CPU lacks {feature}; the dense scan uses {best}"
                    ),
                },
                None => tracing::warn!(
                    "{SCAN_KERNEL_ENV}={wanted} is not a scan path (portable, avx2, avx-vnni, avx512, avx512-vnni); the dense scan uses {best}"
                ),
            }
        }
        let kernels = path.kernels().map(|(kernel, on)| format!("{kernel} {on}")).join(", ");
        tracing::info!("dense scan kernels: {path} ({kernels})");
        path.checked().unwrap_or(Checked(ScanPath::Portable))
    })
}

/// One path's scores of `rows` against `query` with each of the three kernels, every row
/// quantised as the cache quantises it and scored in reverse order (the 4-bit scores empty
/// for an odd dimension); `Err` names the CPU feature the path needs and this CPU lacks.
/// For tests that compare the paths on real vectors ([`crate::kernel_check`]).
pub fn path_scores(path: ScanPath, rows: &[Vec<f32>], query: &[f32]) -> Result<PathScores, &'static str> {
    let checked = path.checked().ok_or_else(|| path.missing_feature().unwrap_or("an x86-64 CPU"))?;
    let dim = query.len();
    assert!(rows.iter().all(|r| r.len() == dim), "rows of the query's dimension");
    let order: Vec<u32> = (0..rows.len() as u32).rev().collect();
    let f32s = order.iter().map(|&r| dot_on(checked, &rows[r as usize], query)).collect();
    let scales: Vec<f32> = rows.iter().map(|r| quantise_scale(r)).collect();
    let codes: Vec<i8> = rows.iter().zip(&scales).flat_map(|(r, &s)| r.iter().map(move |&x| quantise(x, s))).collect();
    let mut int8 = vec![0f32; order.len()];
    dot_i8_rows_on(checked, &codes, &scales, dim, &order, &QuantisedQuery::new(query), &mut int8);
    let mut four_bit = Vec::new();
    if dim.is_multiple_of(2) {
        let mut codes4 = Vec::new();
        let scales4: Vec<f32> = rows
            .iter()
            .map(|r| {
                let scale = quantise4_scale(r);
                push_codes4(r, scale, &mut codes4);
                scale
            })
            .collect();
        four_bit = vec![0f32; order.len()];
        dot_u4_rows_on(checked, &codes4, &scales4, dim, &order, &ByteQuery::new(query), &mut four_bit);
    }
    Ok(PathScores { f32: f32s, int8, four_bit })
}

/// What [`path_scores`] returns: one score per row, in reverse row order, from each kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct PathScores {
    /// The exact `f32` dot products.
    pub f32: Vec<f32>,
    /// The int8 screening pass's scores.
    pub int8: Vec<f32>,
    /// The 4-bit pre-screen's scores (empty for an odd dimension).
    pub four_bit: Vec<f32>,
}

/// `a * b + c`, fused when compiled with FMA.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// The dot product of two equally long vectors.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_on(chosen(), a, b)
}

/// [`dot`] on `path`.
pub(crate) fn dot_on(path: Checked, a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot of vectors of different lengths");
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
            dot_impl::<true>(a, b)
        }
        match path.0 {
            ScanPath::Portable => {}
            #[allow(unsafe_code)]
            // SAFETY: `path` is checked: the CPU has AVX2 and FMA.
            ScanPath::Avx2 | ScanPath::AvxVnni => return unsafe { dot_avx2(a, b) },
            #[allow(unsafe_code)]
            // SAFETY: `path` is checked: the CPU has AVX-512F; the slices are equally long.
            ScanPath::Avx512 | ScanPath::Avx512Vnni => return unsafe { x86::dot_avx512(a, b) },
        }
    }
    let _ = path;
    dot_impl::<false>(a, b)
}

#[inline(always)]
fn dot_impl<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for lane in 0..8 {
            lanes[lane] = madd::<FMA>(x[lane], y[lane], lanes[lane]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// A query quantised to `i16` for the int8 screening pass: `codes[j] * scale ≈ query[j]`.
pub(crate) struct QuantisedQuery {
    pub codes: Vec<i16>,
    pub scale: f32,
}

impl QuantisedQuery {
    /// Quantises `query` so that a row's exact integer sum `Σ c_j q_j` (|c_j| ≤ 127) can
    /// never overflow an `i32`, whatever the dimension.
    pub(crate) fn new(query: &[f32]) -> Self {
        let largest = i32::MAX as f64 / (127.0 * query.len().max(1) as f64);
        let top = largest.clamp(1.0, 32767.0).floor() as f32;
        let max = query.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / top } else { 0.0 };
        let codes =
            query.iter().map(|&x| if scale > 0.0 { (x / scale).round().clamp(-top, top) as i16 } else { 0 }).collect();
        Self { codes, scale }
    }
}

/// For each row index `rows[i]`, `out[i] = scales[r] * query.scale * Σ_j codes[r * dim + j] * query.codes[j]`,
/// the integer sum exact.
pub(crate) fn dot_i8_rows(
    codes: &[i8],
    scales: &[f32],
    dim: usize,
    rows: &[u32],
    query: &QuantisedQuery,
    out: &mut [f32],
) {
    dot_i8_rows_on(chosen(), codes, scales, dim, rows, query, out)
}

/// [`dot_i8_rows`] on `path`.
pub(crate) fn dot_i8_rows_on(
    path: Checked,
    codes: &[i8],
    scales: &[f32],
    dim: usize,
    rows: &[u32],
    query: &QuantisedQuery,
    out: &mut [f32],
) {
    assert_eq!(query.codes.len(), dim, "query of the wrong dimension");
    assert_eq!(rows.len(), out.len(), "one output per row");
    assert!(
        rows.iter().all(|&r| (r as usize + 1) * dim <= codes.len() && (r as usize) < scales.len()),
        "row out of range"
    );
    let scale = |r: u32, sum: i32| scales[r as usize] * query.scale * sum as f32;
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn rows_avx2(
            codes: &[i8],
            dim: usize,
            rows: &[u32],
            query: &[i16],
            out: &mut [f32],
            scale: impl Fn(u32, i32) -> f32,
        ) {
            rows_impl(codes, dim, rows, query, out, scale)
        }
        #[allow(unsafe_code)]
        // SAFETY: `path` is checked, so the CPU has the features of the function called;
        // every row's `dim` codes lie inside `codes` and the query has `dim` codes
        // (asserted above), which is all the intrinsic loads read.
        unsafe {
            match path.0 {
                ScanPath::Portable => {}
                ScanPath::Avx2 => return rows_avx2(codes, dim, rows, &query.codes, out, scale),
                ScanPath::AvxVnni => return x86::rows8_avx_vnni(codes, dim, rows, &query.codes, out, scale),
                ScanPath::Avx512 => return x86::rows8_avx512(codes, dim, rows, &query.codes, out, scale),
                ScanPath::Avx512Vnni => return x86::rows8_avx512_vnni(codes, dim, rows, &query.codes, out, scale),
            }
        }
    }
    let _ = path;
    rows_impl(codes, dim, rows, &query.codes, out, scale)
}

#[inline(always)]
fn rows_impl(codes: &[i8], dim: usize, rows: &[u32], q: &[i16], out: &mut [f32], scale: impl Fn(u32, i32) -> f32) {
    for (&r, slot) in rows.iter().zip(out.iter_mut()) {
        let row = &codes[r as usize * dim..(r as usize + 1) * dim];
        *slot = scale(r, dot_i8_i16(row, q));
    }
}

/// `Σ row[j] · q[j]` in `i32`, exact (no overflow by [`QuantisedQuery::new`]).
#[inline(always)]
fn dot_i8_i16(row: &[i8], q: &[i16]) -> i32 {
    row.iter().zip(q).map(|(&c, &x)| i32::from(c) * i32::from(x)).sum()
}

/// The scale that maps a row's largest magnitude to 7, for its 4-bit codes.
pub(crate) fn quantise4_scale(row: &[f32]) -> f32 {
    row.iter().fold(0f32, |m, x| m.max(x.abs())) / 7.0
}

/// Appends a row's 4-bit codes: byte `j` holds dimension `j` in its low nibble and
/// dimension `j + dim/2` in its high nibble, each as `c + 8` with `c = round(x / scale)` in
/// −7..=7 (so a byte is never negative and the products below fit `pmaddubsw`-style sums).
/// `dim` must be even.
pub(crate) fn push_codes4(row: &[f32], scale: f32, out: &mut Vec<u8>) {
    let half = row.len() / 2;
    let code = |x: f32| -> u8 { if scale > 0.0 { (round_clamp(x / scale, 7) + 8) as u8 } else { 8 } };
    out.extend(row[..half].iter().zip(&row[half..]).map(|(&lo, &hi)| code(lo) | (code(hi) << 4)));
}

/// A query quantised to `i8` for the 4-bit pass: `codes[j] * scale ≈ query[j]`.
pub(crate) struct ByteQuery {
    pub codes: Vec<i8>,
    pub scale: f32,
}

impl ByteQuery {
    pub(crate) fn new(query: &[f32]) -> Self {
        let max = query.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = max / 127.0;
        let codes = query.iter().map(|&x| quantise(x, scale)).collect();
        Self { codes, scale }
    }
}

/// For each row index `rows[i]`, `out[i] = scales[r] * query.scale * Σ_j c_rj * query.codes[j]`
/// with `c_rj` the row's 4-bit codes ([`push_codes4`]), the integer sum exact.
/// (The scan scores through [`dot_u4_rows_many`]; this is its one-query form, for tests.)
#[cfg(test)]
pub(crate) fn dot_u4_rows(codes: &[u8], scales: &[f32], dim: usize, rows: &[u32], query: &ByteQuery, out: &mut [f32]) {
    dot_u4_rows_on(chosen(), codes, scales, dim, rows, query, out)
}

/// For each row index `rows[i]`, `out[i] = scales[r] * query.scale * Σ_j c_rj * query.codes[j]`
/// with `c_rj` the row's 4-bit codes ([`push_codes4`]), the integer sum exact, on `path`.
pub(crate) fn dot_u4_rows_on(
    path: Checked,
    codes: &[u8],
    scales: &[f32],
    dim: usize,
    rows: &[u32],
    query: &ByteQuery,
    out: &mut [f32],
) {
    let half = check_u4_arguments(codes, scales, dim, rows, [query], [&*out]);
    // Σ (u − 8)·q = Σ u·q − 8·Σ q.
    let offset: i32 = 8 * query.codes.iter().map(|&q| i32::from(q)).sum::<i32>();
    let scale = |r: u32, sum: i32| scales[r as usize] * query.scale * (sum - offset) as f32;
    let (low, high) = query.codes.split_at(half);
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: `path` is checked, so the CPU has the features of the function called;
    // every row's `half` bytes lie inside `codes` (asserted above) and each half of the
    // query has `half` codes, which is all the intrinsic loads read.
    unsafe {
        match path.0 {
            ScanPath::Portable => {}
            ScanPath::Avx2 => return x86::rows4_avx2(codes, half, rows, low, high, out, scale),
            ScanPath::AvxVnni => return x86::rows4_avx_vnni(codes, half, rows, low, high, out, scale),
            ScanPath::Avx512 => return x86::rows4_avx512(codes, half, rows, low, high, out, scale),
            ScanPath::Avx512Vnni => return x86::rows4_avx512_vnni(codes, half, rows, low, high, out, scale),
        }
    }
    let _ = path;
    for (&r, slot) in rows.iter().zip(out.iter_mut()) {
        let row = &codes[r as usize * half..(r as usize + 1) * half];
        *slot = scale(r, dot_u4_i8(row, low, high));
    }
}

/// [`dot_u4_rows_on`] for several queries at once: `outs[q][i]` is what [`dot_u4_rows_on`] gives
/// for `queries[q]` and row `rows[i]`, bit for bit. On the 512-bit paths each row's codes
/// are read and unpacked once for every four queries (on AVX-512 VNNI 0.65 ms per query per
/// 100k rows four to a pass, against 1.07 alone: `kernel_timing`); the other paths score one
/// query after another.
pub(crate) fn dot_u4_rows_many(
    codes: &[u8],
    scales: &[f32],
    dim: usize,
    rows: &[u32],
    queries: &[&ByteQuery],
    outs: &mut [&mut [f32]],
) {
    dot_u4_rows_many_on(chosen(), codes, scales, dim, rows, queries, outs)
}

/// [`dot_u4_rows_many`] on `path`.
pub(crate) fn dot_u4_rows_many_on(
    path: Checked,
    codes: &[u8],
    scales: &[f32],
    dim: usize,
    rows: &[u32],
    queries: &[&ByteQuery],
    outs: &mut [&mut [f32]],
) {
    assert_eq!(queries.len(), outs.len(), "one output per query");
    #[cfg(target_arch = "x86_64")]
    if matches!(path.0, ScanPath::Avx512 | ScanPath::Avx512Vnni) && queries.len() > 1 {
        let half = check_u4_arguments(codes, scales, dim, rows, queries.iter().copied(), outs.iter().map(|o| &**o));
        // Σ (u − 8)·q = Σ u·q − 8·Σ q, per query.
        let offsets: Vec<i32> =
            queries.iter().map(|q| 8 * q.codes.iter().map(|&c| i32::from(c)).sum::<i32>()).collect();
        let halves: Vec<(&[i8], &[i8])> = queries.iter().map(|q| q.codes.split_at(half)).collect();
        let scale = |q: usize, r: u32, sum: i32| scales[r as usize] * queries[q].scale * (sum - offsets[q]) as f32;
        #[allow(unsafe_code)]
        // SAFETY: `path` is checked, so the CPU has the features of the function called;
        // every row's `half` bytes lie inside `codes` (asserted above), each half of each
        // query has `half` codes and each output one slot a row, which is all the kernel
        // reads and writes.
        unsafe {
            if path.0 == ScanPath::Avx512Vnni {
                x86::rows4_many_avx512_vnni(codes, half, rows, &halves, outs, scale);
            } else {
                x86::rows4_many_avx512(codes, half, rows, &halves, outs, scale);
            }
        }
        return;
    }
    for (query, out) in queries.iter().zip(outs.iter_mut()) {
        dot_u4_rows_on(path, codes, scales, dim, rows, query, out);
    }
}

/// What the 4-bit kernels read and write, checked before any is called: queries of `dim`
/// codes, an even `dim`, one output slot a row, and every row's codes and scale in range.
/// Returns the bytes of a row, `dim / 2`.
fn check_u4_arguments<'a, 'b>(
    codes: &[u8],
    scales: &[f32],
    dim: usize,
    rows: &[u32],
    queries: impl IntoIterator<Item = &'a ByteQuery>,
    outs: impl IntoIterator<Item = &'b [f32]>,
) -> usize {
    assert!(queries.into_iter().all(|q| q.codes.len() == dim), "query of the wrong dimension");
    assert!(dim.is_multiple_of(2), "4-bit codes need an even dimension");
    assert!(outs.into_iter().all(|out| out.len() == rows.len()), "one output per row");
    let half = dim / 2;
    assert!(
        rows.iter().all(|&r| (r as usize + 1) * half <= codes.len() && (r as usize) < scales.len()),
        "row out of range"
    );
    half
}

/// `Σ_j (row[j] & 15)·low[j] + (row[j] >> 4)·high[j]`, exact.
#[inline(always)]
fn dot_u4_i8(row: &[u8], low: &[i8], high: &[i8]) -> i32 {
    row.iter()
        .zip(low)
        .zip(high)
        .map(|((&b, &l), &h)| i32::from(b & 15) * i32::from(l) + i32::from(b >> 4) * i32::from(h))
        .sum()
}

/// The x86-64 kernels written with intrinsics. Each loads only inside the slices it is given
/// (its caller asserts their lengths) and finishes a row's tail with the portable sum, so
/// any dimension works; the integer sums are the same exact sums as the portable code's.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use std::arch::x86_64::*;

    use super::{dot_i8_i16, dot_u4_i8};

    /// The `f32` dot product, 16 lanes in two accumulators, the tail masked.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        // SAFETY (whole body): loads at `j..j + 16` with `j + 16 ≤ n`, and the masked tail
        // reads only the lanes below `n - j`.
        unsafe {
            let (mut acc0, mut acc1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
            let mut j = 0;
            while j + 32 <= n {
                acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(j)), _mm512_loadu_ps(pb.add(j)), acc0);
                acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(j + 16)), _mm512_loadu_ps(pb.add(j + 16)), acc1);
                j += 32;
            }
            if j + 16 <= n {
                acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(j)), _mm512_loadu_ps(pb.add(j)), acc0);
                j += 16;
            }
            if j < n {
                let mask: __mmask16 = (1u32 << (n - j)) as u16 - 1;
                acc1 = _mm512_fmadd_ps(
                    _mm512_maskz_loadu_ps(mask, pa.add(j)),
                    _mm512_maskz_loadu_ps(mask, pb.add(j)),
                    acc1,
                );
            }
            _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1))
        }
    }

    /// Int8 rows against the `i16` query, 32 dimensions a step: the codes sign-extended to
    /// `i16`, then `vpdpwssd` (VNNI) or `vpmaddwd` + add.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn rows8_avx512(
        codes: &[i8],
        dim: usize,
        rows: &[u32],
        q: &[i16],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's (no VNNI).
        unsafe { rows8_512::<false>(codes, dim, rows, q, out, scale) }
    }

    /// [`rows8_avx512`] with `vpdpwssd`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn rows8_avx512_vnni(
        codes: &[i8],
        dim: usize,
        rows: &[u32],
        q: &[i16],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's.
        unsafe { rows8_512::<true>(codes, dim, rows, q, out, scale) }
    }

    /// The body of the two functions above, inlined into each (so it is compiled with its
    /// caller's features; only the VNNI one reaches `vpdpwssd`).
    #[inline(always)]
    unsafe fn rows8_512<const VNNI: bool>(
        codes: &[i8],
        dim: usize,
        rows: &[u32],
        q: &[i16],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        let body = dim - dim % 32;
        for (&r, slot) in rows.iter().zip(out.iter_mut()) {
            let row = &codes[r as usize * dim..(r as usize + 1) * dim];
            // SAFETY: loads of 32 codes and 32 query values at `j < body ≤ dim`.
            let mut sum = unsafe {
                let mut acc = _mm512_setzero_si512();
                let mut j = 0;
                while j < body {
                    let c = _mm512_cvtepi8_epi16(_mm256_loadu_si256(row.as_ptr().add(j).cast()));
                    let x = _mm512_loadu_si512(q.as_ptr().add(j).cast());
                    acc = if VNNI {
                        _mm512_dpwssd_epi32(acc, c, x)
                    } else {
                        _mm512_add_epi32(acc, _mm512_madd_epi16(c, x))
                    };
                    j += 32;
                }
                _mm512_reduce_add_epi32(acc)
            };
            sum += dot_i8_i16(&row[body..], &q[body..]);
            *slot = scale(r, sum);
        }
    }

    /// Int8 rows against the `i16` query with AVX-VNNI: 16 dimensions a step, `vpdpwssd`.
    #[target_feature(enable = "avx2,fma,avxvnni")]
    pub(super) unsafe fn rows8_avx_vnni(
        codes: &[i8],
        dim: usize,
        rows: &[u32],
        q: &[i16],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        let body = dim - dim % 16;
        for (&r, slot) in rows.iter().zip(out.iter_mut()) {
            let row = &codes[r as usize * dim..(r as usize + 1) * dim];
            // SAFETY: loads of 16 codes and 16 query values at `j < body ≤ dim`.
            let mut sum = unsafe {
                let (mut acc0, mut acc1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                let mut j = 0;
                while j + 32 <= body {
                    let c0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(row.as_ptr().add(j).cast()));
                    let c1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(row.as_ptr().add(j + 16).cast()));
                    acc0 = _mm256_dpwssd_avx_epi32(acc0, c0, _mm256_loadu_si256(q.as_ptr().add(j).cast()));
                    acc1 = _mm256_dpwssd_avx_epi32(acc1, c1, _mm256_loadu_si256(q.as_ptr().add(j + 16).cast()));
                    j += 32;
                }
                if j < body {
                    let c = _mm256_cvtepi8_epi16(_mm_loadu_si128(row.as_ptr().add(j).cast()));
                    acc0 = _mm256_dpwssd_avx_epi32(acc0, c, _mm256_loadu_si256(q.as_ptr().add(j).cast()));
                }
                hsum256(_mm256_add_epi32(acc0, acc1))
            };
            sum += dot_i8_i16(&row[body..], &q[body..]);
            *slot = scale(r, sum);
        }
    }

    /// The 4-bit rows with 256-bit vectors, 32 bytes (64 dimensions) a step: the low and
    /// high nibbles against the query's two halves, with `vpdpbusd` (AVX-VNNI) or with
    /// `vpmaddubsw` (u8 × i8 pairs, |sum| ≤ 2·15·127, no saturation), the two added as
    /// `i16` (≤ 7620) and widened by `vpmaddwd`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn rows4_avx2(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        low: &[i8],
        high: &[i8],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's (no VNNI).
        unsafe { rows4_256::<false>(codes, half, rows, low, high, out, scale) }
    }

    /// [`rows4_avx2`] with `vpdpbusd`.
    #[target_feature(enable = "avx2,fma,avxvnni")]
    pub(super) unsafe fn rows4_avx_vnni(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        low: &[i8],
        high: &[i8],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's.
        unsafe { rows4_256::<true>(codes, half, rows, low, high, out, scale) }
    }

    /// The body of the two functions above, inlined into each.
    #[inline(always)]
    unsafe fn rows4_256<const VNNI: bool>(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        low: &[i8],
        high: &[i8],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        let body = half - half % 32;
        for (&r, slot) in rows.iter().zip(out.iter_mut()) {
            let row = &codes[r as usize * half..(r as usize + 1) * half];
            // SAFETY: loads of 32 bytes of the row and of each query half at `j < body ≤ half`.
            let mut sum = unsafe {
                let mask = _mm256_set1_epi8(0x0F);
                let ones = _mm256_set1_epi16(1);
                let mut acc = _mm256_setzero_si256();
                let mut j = 0;
                while j < body {
                    let bytes = _mm256_loadu_si256(row.as_ptr().add(j).cast());
                    let lo = _mm256_and_si256(bytes, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
                    let q_lo = _mm256_loadu_si256(low.as_ptr().add(j).cast());
                    let q_hi = _mm256_loadu_si256(high.as_ptr().add(j).cast());
                    acc = if VNNI {
                        _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(acc, lo, q_lo), hi, q_hi)
                    } else {
                        let pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, q_lo), _mm256_maddubs_epi16(hi, q_hi));
                        _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones))
                    };
                    j += 32;
                }
                hsum256(acc)
            };
            sum += dot_u4_i8(&row[body..], &low[body..], &high[body..]);
            *slot = scale(r, sum);
        }
    }

    /// The sums of four accumulators' eight lanes each (wrapping, as the lanes' own sums),
    /// in one reduction. (Rows four at a time measured no faster on the 256-bit paths, whose
    /// one-row sum is cheaper; [`sum4_512`] ends here.)
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[inline(always)]
    unsafe fn sum4_256(s: [__m256i; 4]) -> [i32; 4] {
        // SAFETY: the caller's.
        unsafe {
            // [s0 01, s0 23, s1 01, s1 23 | s0 45, s0 67, s1 45, s1 67], likewise for s2, s3;
            // then each lane a quarter of one row's sum, the halves added last.
            let t = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
            let u = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256::<1>(t));
            let mut sums = [0i32; 4];
            _mm_storeu_si128(sums.as_mut_ptr().cast(), u);
            sums
        }
    }

    /// The 4-bit rows with 512-bit vectors, 64 bytes (128 dimensions) a step, then one
    /// 32-byte step and the portable tail; `vpdpbusd` (AVX-512 VNNI) or `vpmaddubsw` as in
    /// [`rows4_avx2`]. Inlined into its two callers.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn rows4_avx512(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        low: &[i8],
        high: &[i8],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's (no VNNI).
        unsafe { rows4_512::<false>(codes, half, rows, low, high, out, scale) }
    }

    /// [`rows4_avx512`] with `vpdpbusd`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn rows4_avx512_vnni(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        low: &[i8],
        high: &[i8],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's.
        unsafe { rows4_512::<true>(codes, half, rows, low, high, out, scale) }
    }

    /// The body of the two functions above, inlined into each. Rows go four at a time:
    /// their four accumulators are reduced together ([`sum4_512`]), not one by one. A
    /// row's horizontal sum cost about as much as its three 64-byte steps, and with it the
    /// kernel ran at 11 GB/s where a plain read of the codes runs at 26 (`kernel_timing`).
    #[inline(always)]
    unsafe fn rows4_512<const VNNI: bool>(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        low: &[i8],
        high: &[i8],
        out: &mut [f32],
        scale: impl Fn(u32, i32) -> f32,
    ) {
        let wide = half - half % 64;
        let mut fours = rows.chunks_exact(4);
        let mut slots = out.chunks_exact_mut(4);
        for (four, slot) in (&mut fours).zip(&mut slots) {
            let row = |k: usize| &codes[four[k] as usize * half..(four[k] as usize + 1) * half];
            let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
            // SAFETY: loads of 64 bytes of each row and of each query half at `j < wide ≤ half`.
            let sums = unsafe {
                let mut acc = [_mm512_setzero_si512(); 4];
                let mut j = 0;
                while j < wide {
                    let q_lo = _mm512_loadu_si512(low.as_ptr().add(j).cast());
                    let q_hi = _mm512_loadu_si512(high.as_ptr().add(j).cast());
                    for (acc, row) in acc.iter_mut().zip([r0, r1, r2, r3]) {
                        *acc = step4_512::<VNNI>(*acc, row.as_ptr().add(j), q_lo, q_hi);
                    }
                    j += 64;
                }
                sum4_512(acc)
            };
            for (k, (slot, sum)) in slot.iter_mut().zip(sums).enumerate() {
                // SAFETY: as for a single row below, from `wide`.
                let rest = if wide < half { unsafe { rest4_512(row(k), low, high, wide) } } else { 0 };
                *slot = scale(four[k], sum.wrapping_add(rest));
            }
        }
        for (&r, slot) in fours.remainder().iter().zip(slots.into_remainder()) {
            let row = &codes[r as usize * half..(r as usize + 1) * half];
            // SAFETY: loads of 64 bytes of the row and of each query half at `j < wide ≤
            // half`, then as `rest4_512` needs.
            let sum = unsafe {
                let mut acc = _mm512_setzero_si512();
                let mut j = 0;
                while j < wide {
                    let q_lo = _mm512_loadu_si512(low.as_ptr().add(j).cast());
                    let q_hi = _mm512_loadu_si512(high.as_ptr().add(j).cast());
                    acc = step4_512::<VNNI>(acc, row.as_ptr().add(j), q_lo, q_hi);
                    j += 64;
                }
                _mm512_reduce_add_epi32(acc).wrapping_add(rest4_512(row, low, high, wide))
            };
            *slot = scale(r, sum);
        }
    }

    /// [`rows4_avx512`] for several queries: `outs[q][i]` gets `scale(q, rows[i], sum)` with
    /// `sum` the exact sum of row `rows[i]` against `queries[q]`'s halves.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn rows4_many_avx512(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        queries: &[(&[i8], &[i8])],
        outs: &mut [&mut [f32]],
        scale: impl Fn(usize, u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's (no VNNI).
        unsafe { rows4_many_512::<false>(codes, half, rows, queries, outs, scale) }
    }

    /// [`rows4_many_avx512`] with `vpdpbusd`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn rows4_many_avx512_vnni(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        queries: &[(&[i8], &[i8])],
        outs: &mut [&mut [f32]],
        scale: impl Fn(usize, u32, i32) -> f32,
    ) {
        // SAFETY: this function's features are the body's.
        unsafe { rows4_many_512::<true>(codes, half, rows, queries, outs, scale) }
    }

    /// The body of the two functions above. Each row is taken once; its 64-byte steps are
    /// loaded and unpacked once for four queries, whose four accumulators are reduced
    /// together ([`sum4_512`]). The last group is filled up to four with zero queries, whose
    /// sums are not used.
    #[inline(always)]
    unsafe fn rows4_many_512<const VNNI: bool>(
        codes: &[u8],
        half: usize,
        rows: &[u32],
        queries: &[(&[i8], &[i8])],
        outs: &mut [&mut [f32]],
        scale: impl Fn(usize, u32, i32) -> f32,
    ) {
        let wide = half - half % 64;
        // Groups of exactly four queries, the last filled up with zero queries, so that the
        // four accumulators stay in registers (their loop is unrolled).
        let zeros = vec![0i8; half];
        let mut padded: Vec<(&[i8], &[i8])> = queries.to_vec();
        padded.resize(queries.len().next_multiple_of(4), (&zeros, &zeros));
        let groups: Vec<[(&[i8], &[i8]); 4]> =
            padded.chunks_exact(4).map(|four| [four[0], four[1], four[2], four[3]]).collect();
        for (i, &r) in rows.iter().enumerate() {
            let row = &codes[r as usize * half..(r as usize + 1) * half];
            for (group, four) in groups.iter().enumerate() {
                // SAFETY: loads of 64 bytes of the row and of each query half at `j < wide ≤
                // half`, then as `rest4_512` needs.
                let sums = unsafe {
                    let mut acc = [_mm512_setzero_si512(); 4];
                    let mut j = 0;
                    while j < wide {
                        let (lo, hi) = unpack4_512(row.as_ptr().add(j));
                        for k in 0..4 {
                            let q_lo = _mm512_loadu_si512(four[k].0.as_ptr().add(j).cast());
                            let q_hi = _mm512_loadu_si512(four[k].1.as_ptr().add(j).cast());
                            acc[k] = dot4_512::<VNNI>(acc[k], lo, hi, q_lo, q_hi);
                        }
                        j += 64;
                    }
                    sum4_512(acc)
                };
                for (k, sum) in sums.into_iter().enumerate() {
                    let q = group * 4 + k;
                    if q >= queries.len() {
                        break;
                    }
                    let (low, high) = four[k];
                    // SAFETY: the row and both halves hold `half` bytes; the caller's features.
                    let rest = if wide < half { unsafe { rest4_512(row, low, high, wide) } } else { 0 };
                    outs[q][i] = scale(q, r, sum.wrapping_add(rest));
                }
            }
        }
    }

    /// One 64-byte step of a 4-bit row (128 dimensions) against the query halves' codes
    /// at the same place, added to `acc`.
    ///
    /// # Safety
    /// 64 bytes must be readable at `bytes`; the CPU must have AVX-512 BW (and VNNI when
    /// `VNNI`).
    #[inline(always)]
    unsafe fn step4_512<const VNNI: bool>(acc: __m512i, bytes: *const u8, q_lo: __m512i, q_hi: __m512i) -> __m512i {
        // SAFETY: the caller's.
        unsafe {
            let (lo, hi) = unpack4_512(bytes);
            dot4_512::<VNNI>(acc, lo, hi, q_lo, q_hi)
        }
    }

    /// The low and high nibbles of the 64 bytes at `bytes`, one a byte.
    ///
    /// # Safety
    /// 64 bytes must be readable at `bytes`; the CPU must have AVX-512 BW.
    #[inline(always)]
    unsafe fn unpack4_512(bytes: *const u8) -> (__m512i, __m512i) {
        // SAFETY: the caller's.
        unsafe {
            let mask = _mm512_set1_epi8(0x0F);
            let bytes = _mm512_loadu_si512(bytes.cast());
            (_mm512_and_si512(bytes, mask), _mm512_and_si512(_mm512_srli_epi16(bytes, 4), mask))
        }
    }

    /// `acc` plus the exact sums of unpacked nibbles `lo` and `hi` against the query halves'
    /// codes, four products to a lane.
    ///
    /// # Safety
    /// The CPU must have AVX-512 BW (and VNNI when `VNNI`).
    #[inline(always)]
    unsafe fn dot4_512<const VNNI: bool>(
        acc: __m512i,
        lo: __m512i,
        hi: __m512i,
        q_lo: __m512i,
        q_hi: __m512i,
    ) -> __m512i {
        // SAFETY: the caller's.
        unsafe {
            if VNNI {
                _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, lo, q_lo), hi, q_hi)
            } else {
                let pairs = _mm512_add_epi16(_mm512_maddubs_epi16(lo, q_lo), _mm512_maddubs_epi16(hi, q_hi));
                _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)))
            }
        }
    }

    /// The sums of four accumulators' sixteen lanes each (wrapping, as the lanes' own
    /// sums), in one reduction.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F.
    #[inline(always)]
    unsafe fn sum4_512(acc: [__m512i; 4]) -> [i32; 4] {
        // SAFETY: the caller's.
        unsafe {
            // (No closure here: a closure does not take its function's target features, and
            // the intrinsics in it would be called instead of inlined.)
            let mut s = [_mm256_setzero_si256(); 4];
            for (s, a) in s.iter_mut().zip(acc) {
                *s = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64::<1>(a));
            }
            sum4_256(s)
        }
    }

    /// A 4-bit row's sum from byte `from` (after its 64-byte steps): one 32-byte step if
    /// there is room, then the portable tail.
    ///
    /// # Safety
    /// `row`, `low` and `high` must hold the same number of bytes; the CPU must have AVX2.
    #[inline(always)]
    unsafe fn rest4_512(row: &[u8], low: &[i8], high: &[i8], from: usize) -> i32 {
        let body = row.len() - row.len() % 32;
        let mut total = 0i32;
        let mut j = from;
        if j < body {
            // SAFETY: 32 bytes at `j < body ≤ len` of each slice, and the caller's features.
            total = unsafe {
                let mask = _mm256_set1_epi8(0x0F);
                let bytes = _mm256_loadu_si256(row.as_ptr().add(j).cast());
                let lo = _mm256_and_si256(bytes, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
                let q_lo = _mm256_loadu_si256(low.as_ptr().add(j).cast());
                let q_hi = _mm256_loadu_si256(high.as_ptr().add(j).cast());
                let pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, q_lo), _mm256_maddubs_epi16(hi, q_hi));
                hsum256(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
            };
            j += 32;
        }
        total.wrapping_add(dot_u4_i8(&row[j..], &low[j..], &high[j..]))
    }

    /// The sum of a vector's eight `i32` lanes (wrapping, as the lanes' own sums).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hsum256(v: __m256i) -> i32 {
        let sum128 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        let sum64 = _mm_add_epi32(sum128, _mm_unpackhi_epi64(sum128, sum128));
        let sum32 = _mm_add_epi32(sum64, _mm_shuffle_epi32(sum64, 1));
        _mm_cvtsi128_si32(sum32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..dim)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
    }

    /// `n` rows of dimension `dim` of the shapes that stress a kernel: random, a zero row,
    /// rows of one value (every code at its largest magnitude), large and tiny scales.
    fn awkward_rows(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        (0..n as u64)
            .map(|i| match i % 6 {
                0 => vec![0.0; dim],
                1 => vec![if i % 4 == 1 { 1.0 } else { -1.0 }; dim],
                2 => vector(seed + i, dim).iter().map(|x| x * 1e4).collect(),
                3 => vector(seed + i, dim).iter().map(|x| x * 1e-4).collect(),
                _ => vector(seed + i, dim),
            })
            .collect()
    }

    /// Every scan path against the portable one, on every dimension from 1 to 130 and a few
    /// larger ones (tails of every length for each step width), with awkward rows and
    /// queries: the integer kernels must give the same scores bit for bit (their sums are
    /// exact), the `f32` dot the same up to rounding. A path this CPU lacks is skipped, and
    /// the test says so.
    #[test]
    fn every_scan_path_gives_the_portable_scores() {
        let dims: Vec<usize> = (1..=130).chain([191, 192, 254, 256, 383, 384, 768, 1000, 1024]).collect();
        let mut ran = Vec::new();
        for path in ScanPath::ALL {
            if let Some(feature) = path.missing_feature() {
                eprintln!("scan path {path}: skipped, this CPU lacks {feature}");
                continue;
            }
            for &dim in &dims {
                let rows = awkward_rows(13, dim, dim as u64);
                let queries = [vector(dim as u64 + 7, dim), vec![1.0; dim], vec![-1.0; dim], vec![0.0; dim]];
                for (qi, query) in queries.iter().enumerate() {
                    let portable = path_scores(ScanPath::Portable, &rows, query).expect("portable runs everywhere");
                    let got = path_scores(path, &rows, query).expect("checked above");
                    assert_eq!(got.int8, portable.int8, "{path}, int8, dim {dim}, query {qi}");
                    assert_eq!(got.four_bit, portable.four_bit, "{path}, 4-bit, dim {dim}, query {qi}");
                    assert_eq!(got.four_bit.is_empty(), dim % 2 == 1);
                    for (r, (&a, &b)) in got.f32.iter().zip(&portable.f32).enumerate() {
                        let row = &rows[rows.len() - 1 - r];
                        let magnitude: f32 = row.iter().zip(query).map(|(x, y)| (x * y).abs()).sum();
                        assert!(
                            (a - b).abs() <= 1e-5 * magnitude + f32::MIN_POSITIVE,
                            "{path}, f32, dim {dim}, query {qi}, row {r}: {a} vs {b}"
                        );
                    }
                }
            }
            ran.push(path.name());
        }
        eprintln!("scan paths run on this CPU: {}", ran.join(", "));
        assert!(ran.contains(&"portable"));
    }

    /// The integer paths' sums stay exact where the codes are at their extremes: int8 rows
    /// of ±127 against the largest `i16` query codes at a high dimension (the sum near
    /// `i32`'s limit), and 4-bit rows of 15s and 1s against ±127 (no `i16` saturation).
    #[test]
    fn integer_paths_do_not_saturate_at_the_extremes() {
        for dim in [384, 4096, 16_384] {
            let rows = vec![vec![1.0f32; dim], vec![-1.0f32; dim]];
            let query: Vec<f32> = (0..dim).map(|j| if j % 3 == 0 { -1.0 } else { 1.0 }).collect();
            let portable = path_scores(ScanPath::Portable, &rows, &query).expect("portable");
            // Σ over a third of -1s and two thirds of +1s: dim / 3 net, times the scales.
            let net = (query.iter().sum::<f32>()).abs();
            assert!((portable.int8[0].abs() - net).abs() <= 1e-3 * net, "dim {dim}: {:?} vs {net}", portable.int8);
            for path in ScanPath::ALL {
                let Ok(got) = path_scores(path, &rows, &query) else {
                    eprintln!(
                        "scan path {path}: skipped at dim {dim}, this CPU lacks {}",
                        path.missing_feature().unwrap_or("?")
                    );
                    continue;
                };
                assert_eq!(got.int8, portable.int8, "{path}, dim {dim}");
                assert_eq!(got.four_bit, portable.four_bit, "{path}, dim {dim}");
            }
        }
    }

    /// Several queries scored in one pass give each query's own scores, bit for bit, on
    /// every path this CPU has: 1 to 9 queries (whole and partial groups of four), awkward
    /// rows and queries, dimensions with and without tails, rows in a scattered order.
    #[test]
    fn many_queries_at_once_score_as_each_alone() {
        let mut ran = Vec::new();
        for path in ScanPath::ALL {
            let Some(checked) = path.checked() else {
                eprintln!("scan path {path}: skipped, this CPU lacks {}", path.missing_feature().unwrap_or("?"));
                continue;
            };
            for dim in [2, 64, 126, 128, 130, 190, 254, 256, 384, 386, 1024] {
                let rows = awkward_rows(23, dim, dim as u64 + 3);
                let mut codes4 = Vec::new();
                let scales4: Vec<f32> = rows
                    .iter()
                    .map(|r| {
                        let scale = quantise4_scale(r);
                        push_codes4(r, scale, &mut codes4);
                        scale
                    })
                    .collect();
                let order: Vec<u32> = (0..rows.len() as u32).map(|i| (i * 7) % rows.len() as u32).collect();
                let mut queries = vec![vec![1.0; dim], vec![-1.0; dim], vec![0.0; dim]];
                queries.extend((0..6).map(|s| vector(s * 11 + dim as u64, dim)));
                let bytes: Vec<ByteQuery> = queries.iter().map(|q| ByteQuery::new(q)).collect();
                for n in 1..=bytes.len() {
                    let batch: Vec<&ByteQuery> = bytes[..n].iter().collect();
                    let mut outs = vec![vec![f32::NAN; order.len()]; n];
                    let mut slots: Vec<&mut [f32]> = outs.iter_mut().map(|o| o.as_mut_slice()).collect();
                    dot_u4_rows_many_on(checked, &codes4, &scales4, dim, &order, &batch, &mut slots);
                    for (q, got) in outs.iter().enumerate() {
                        let mut alone = vec![0f32; order.len()];
                        dot_u4_rows_on(
                            Checked(ScanPath::Portable),
                            &codes4,
                            &scales4,
                            dim,
                            &order,
                            batch[q],
                            &mut alone,
                        );
                        assert_eq!(got, &alone, "{path}, dim {dim}, {n} queries, query {q}");
                    }
                }
            }
            ran.push(path.name());
        }
        eprintln!("scan paths run on this CPU: {}", ran.join(", "));
    }

    #[test]
    fn scan_paths_name_and_parse_each_other() {
        for path in ScanPath::ALL {
            assert_eq!(ScanPath::parse(path.name()), Some(path));
            assert_eq!(path.kernels().len(), 3);
        }
        assert_eq!(ScanPath::parse("avx1024"), None);
        assert_eq!(ScanPath::Portable.missing_feature(), None);
        // The best path is one this CPU has, and the chosen one too.
        assert_eq!(best_scan_path().missing_feature(), None);
        assert_eq!(scan_path().missing_feature(), None);
    }

    #[test]
    fn dot_matches_a_plain_sum_for_every_length() {
        for dim in [0, 1, 7, 8, 9, 384, 385] {
            let (a, b) = (vector(1, dim), vector(2, dim));
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            assert!((f64::from(dot(&a, &b)) - plain).abs() < 1e-4, "dim {dim}");
        }
    }

    #[test]
    fn four_bit_scores_equal_the_dequantised_product() {
        // 384 and 128 take the AVX2 kernel (half a multiple of 32), 2 and 16 the portable one.
        for dim in [2, 16, 128, 384] {
            let rows: Vec<Vec<f32>> = (0..20).map(|s| vector(s + 40, dim)).collect();
            let query = vector(7, dim);
            let quantised = ByteQuery::new(&query);
            let mut codes = Vec::new();
            let scales: Vec<f32> = rows
                .iter()
                .map(|row| {
                    let scale = quantise4_scale(row);
                    push_codes4(row, scale, &mut codes);
                    scale
                })
                .collect();
            assert_eq!(codes.len(), rows.len() * dim / 2);
            let indexes: Vec<u32> = (0..rows.len() as u32).rev().collect();
            let mut out = vec![0f32; rows.len()];
            dot_u4_rows(&codes, &scales, dim, &indexes, &quantised, &mut out);
            for (&r, &got) in indexes.iter().zip(&out) {
                let row = &rows[r as usize];
                let scale = scales[r as usize];
                // Decode by hand and sum in f64 against the quantised query.
                let half = dim / 2;
                let expected: f64 = (0..dim)
                    .map(|j| {
                        let byte = codes[r as usize * half + j % half];
                        let u = if j < half { byte & 15 } else { byte >> 4 };
                        let c = f64::from(u) - 8.0;
                        assert!(
                            (c * f64::from(scale) - f64::from(row[j])).abs() <= f64::from(scale) * 0.5 + 1e-6,
                            "dimension {j} decodes within half a step"
                        );
                        c * f64::from(quantised.codes[j]) * f64::from(quantised.scale) * f64::from(scale)
                    })
                    .sum();
                assert!(
                    (f64::from(got) - expected).abs() <= 1e-5 * (1.0 + expected.abs()),
                    "dim {dim} row {r}: {got} vs {expected}"
                );
            }
        }
    }

    #[test]
    fn int8_scores_stay_within_their_error_bound() {
        let dim = 384;
        let rows: Vec<Vec<f32>> = (0..50).map(|s| vector(s + 10, dim)).collect();
        let query = vector(99, dim);
        let scales: Vec<f32> = rows.iter().map(|r| quantise_scale(r)).collect();
        let codes: Vec<i8> =
            rows.iter().zip(&scales).flat_map(|(r, &s)| r.iter().map(move |&x| quantise(x, s))).collect();
        let picked: Vec<u32> = (0..50).rev().collect();
        let mut approx = vec![0f32; picked.len()];
        let quantised = QuantisedQuery::new(&query);
        dot_i8_rows(&codes, &scales, dim, &picked, &quantised, &mut approx);
        let l1: f32 = query.iter().map(|x| x.abs()).sum();
        for (&r, &a) in picked.iter().zip(&approx) {
            let exact = dot(&rows[r as usize], &query);
            let bound = scales[r as usize] * (0.5 * l1 + 0.5 * quantised.scale * 127.0 * dim as f32);
            assert!((exact - a).abs() <= bound * 1.01, "row {r}: exact {exact}, approx {a}, bound {bound}");
            // And the screening is not vacuous: it is far closer than the crude bound.
            assert!((exact - a).abs() < 0.05);
        }
    }

    #[test]
    fn quantised_queries_cannot_overflow_at_any_dimension() {
        for dim in [1, 384, 3072, 100_000] {
            let query = vec![1.0f32; dim];
            let q = QuantisedQuery::new(&query);
            let worst = 127i64 * i64::from(q.codes[0]) * dim as i64;
            assert!(worst <= i64::from(i32::MAX), "dim {dim}: {worst}");
            assert!(q.codes[0] >= 1);
        }
        assert_eq!(QuantisedQuery::new(&[0.0, 0.0]).codes, [0, 0]);
    }

    #[test]
    fn zero_rows_quantise_to_zero() {
        assert_eq!(quantise_scale(&[0.0; 4]), 0.0);
        assert_eq!(quantise(0.3, 0.0), 0);
        assert_eq!(quantise(-1.0, 1.0 / 127.0), -127);
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    /// Not a test: `cargo test --release -p membank-store --lib kernel_timing -- --ignored
    /// --nocapture` prints each path's time per row for the 4-bit and int8 passes.
    #[test]
    #[ignore]
    fn kernel_timing() {
        let (n, dim) = (100_000usize, 384usize);
        let mut x = 7u64;
        let mut next = move || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let data: Vec<f32> = (0..n * dim).map(|_| next()).collect();
        let query: Vec<f32> = (0..dim).map(|_| next()).collect();
        let (mut codes, mut scales, mut codes4, mut scales4) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for row in data.chunks(dim) {
            let s = quantise_scale(row);
            codes.extend(row.iter().map(|&v| quantise(v, s)));
            scales.push(s);
            let s4 = quantise4_scale(row);
            push_codes4(row, s4, &mut codes4);
            scales4.push(s4);
        }
        let rows: Vec<u32> = (0..n as u32).collect();
        let mut out = vec![0f32; n];
        let (q8, q4) = (QuantisedQuery::new(&query), ByteQuery::new(&query));
        for path in ScanPath::ALL {
            let Some(checked) = path.checked() else { continue };
            let mut t4 = Vec::new();
            let mut t8 = Vec::new();
            for _ in 0..21 {
                let start = std::time::Instant::now();
                dot_u4_rows_on(checked, &codes4, &scales4, dim, &rows, &q4, &mut out);
                t4.push(start.elapsed().as_secs_f64() * 1e3);
                let start = std::time::Instant::now();
                dot_i8_rows_on(checked, &codes, &scales, dim, &rows, &q8, &mut out);
                t8.push(start.elapsed().as_secs_f64() * 1e3);
            }
            t4.sort_by(f64::total_cmp);
            t8.sort_by(f64::total_cmp);
            eprintln!("{path:>12}: 4-bit {:.3} ms, int8 {:.3} ms per 100k rows (medians of 21)", t4[10], t8[10]);
            // Several queries in one pass, per query.
            let bytes: Vec<ByteQuery> = (0..8).map(|k| ByteQuery::new(&data[k * dim..(k + 1) * dim])).collect();
            for n in [1, 2, 4, 8] {
                let batch: Vec<&ByteQuery> = bytes[..n].iter().collect();
                let mut outs = vec![vec![0f32; rows.len()]; n];
                let mut t = Vec::new();
                for _ in 0..11 {
                    let mut slots: Vec<&mut [f32]> = outs.iter_mut().map(|o| o.as_mut_slice()).collect();
                    let start = std::time::Instant::now();
                    dot_u4_rows_many_on(checked, &codes4, &scales4, dim, &rows, &batch, &mut slots);
                    t.push(start.elapsed().as_secs_f64() * 1e3 / n as f64);
                }
                t.sort_by(f64::total_cmp);
                eprintln!("{path:>12}: 4-bit, {n} queries a pass: {:.3} ms per query per 100k rows", t[5]);
            }
        }
    }
}
