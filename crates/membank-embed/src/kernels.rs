//! Numeric kernels of the BERT forward pass: a safe, bounds-checked wrapper around
//! `matrixmultiply`'s single-precision matrix product (AVX2/FMA kernels chosen at run time),
//! the int8 products of the linear layers ([`matmul_q8`]: portable, AVX2, AVX-VNNI,
//! AVX-512 VNNI and AMX paths, bit-identical), and the element-wise functions (layer norm,
//! softmax, GELU, L2 normalisation), each compiled three times — for the baseline target, for AVX2+FMA and for AVX-512 — and
//! picked at run time.
//!
//! This is the one module that is allowed `unsafe`: `sgemm` takes raw pointers, the SIMD
//! variants may only be called on a CPU that has them, and the AMX path is inline assembly
//! (stable Rust has no AMX intrinsics) after a system call that asks Linux for the tile
//! state, and the one helper thread that takes the right half of a lone text's products is
//! handed borrowed data (see [`helper`]). The wrappers check every index a product can touch
//! against the slices' lengths before the call, so no caller can make one read or write out
//! of bounds. It deliberately does not parallelise beyond two column halves: the caller
//! splits work across threads and each thread runs single-threaded products, which behaves
//! better than a spinning pool on a small, shared machine; the helper spins only for 200 µs
//! after each product, and a half it has not started is taken back.
//!
//! Why matrixmultiply and not the `gemm` crate: both were measured on this workload
//! (all-MiniLM-L6-v2 shapes, one thread, Zen 3) and were within noise of each other, and
//! matrixmultiply compiles in about a tenth of the time with one small dependency.

/// A strided matrix view into a flat slice: element `(i, j)` is at
/// `offset + i * row_stride + j * col_stride`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View {
    pub offset: usize,
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl View {
    /// A dense row-major `rows × cols` matrix starting at `offset`.
    pub(crate) fn dense(offset: usize, rows: usize, cols: usize) -> Self {
        Self { offset, rows, cols, row_stride: cols, col_stride: 1 }
    }

    /// A `rows × cols` block of a row-major matrix whose rows are `row_stride` long.
    pub(crate) fn block(offset: usize, rows: usize, cols: usize, row_stride: usize) -> Self {
        Self { offset, rows, cols, row_stride, col_stride: 1 }
    }

    /// The transpose of this view (no data moves).
    pub(crate) fn t(self) -> Self {
        Self {
            offset: self.offset,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }

    /// Whether every element of the view lies inside a slice of length `len`.
    fn fits(&self, len: usize) -> bool {
        if self.rows == 0 || self.cols == 0 {
            return self.offset <= len;
        }
        let last = (self.rows - 1)
            .checked_mul(self.row_stride)
            .and_then(|r| (self.cols - 1).checked_mul(self.col_stride).and_then(|c| r.checked_add(c)))
            .and_then(|rc| rc.checked_add(self.offset));
        matches!(last, Some(last) if last < len)
    }
}

/// `c = a · b` (or `c += a · b` when `accumulate`), all single precision.
///
/// Panics (a bug in this crate, never an input error) if the shapes disagree, a view does
/// not fit its slice, or `c`'s view could write one element twice.
pub(crate) fn matmul(a: &[f32], av: View, b: &[f32], bv: View, c: &mut [f32], cv: View, accumulate: bool) {
    assert_eq!(av.rows, cv.rows, "matmul: rows of a and c differ");
    assert_eq!(bv.cols, cv.cols, "matmul: columns of b and c differ");
    assert_eq!(av.cols, bv.rows, "matmul: inner dimensions differ");
    assert!(av.fits(a.len()) && bv.fits(b.len()) && cv.fits(c.len()), "matmul: view out of bounds");
    // Distinct destination elements: unit column stride and rows that do not overlap.
    assert!(cv.col_stride == 1 && (cv.rows <= 1 || cv.row_stride >= cv.cols), "matmul: overlapping destination");
    let (m, n, k) = (cv.rows, cv.cols, av.cols);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                let start = cv.offset + i * cv.row_stride;
                c[start..start + n].fill(0.0);
            }
        }
        return;
    }
    if m <= SMALL_M && bv.col_stride == 1 {
        small_m(a, av, b, bv, c, cv, accumulate);
        return;
    }
    let stride = |s: usize| isize::try_from(s).expect("matmul: stride exceeds isize");
    #[allow(unsafe_code)]
    // SAFETY: the asserts above prove that every element sgemm reads lies inside `a` and `b`
    // and every element it writes lies inside `c`, each written once; `c` is borrowed
    // mutably, so it does not alias `a` or `b`. matrixmultiply is built without its
    // threading feature, so the call stays on this thread.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr().add(av.offset),
            stride(av.row_stride),
            stride(av.col_stride),
            b.as_ptr().add(bv.offset),
            stride(bv.row_stride),
            stride(bv.col_stride),
            if accumulate { 1.0 } else { 0.0 },
            c.as_mut_ptr().add(cv.offset),
            stride(cv.row_stride),
            stride(cv.col_stride),
        );
    }
}

/// Whether the CPU has AVX2 and FMA; `std` caches the answer after the first call.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Whether the CPU has the AVX-512 subsets the element-wise kernels are compiled for.
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512() -> bool {
    #[cfg(test)]
    if AVX512_OFF.with(std::cell::Cell::get) {
        return false;
    }
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") && has_avx2_fma()
}

#[cfg(test)]
thread_local! {
    /// Makes [`dispatch!`] skip its AVX-512 build on this thread, so that tests can compare
    /// it with the AVX2 one.
    pub(crate) static AVX512_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `$body` compiled for AVX-512 (16 lanes) or AVX2 (8 lanes), both with FMA, when the
/// CPU has them, else compiled for the baseline target. `$fma` is the const generic the
/// body uses to choose `mul_add` (one instruction with FMA, a slow libm call without).
///
/// The AVX-512 and AVX2 builds give bit-identical results: they compile the same Rust, the
/// compiler never reorders floating-point arithmetic, and every `mul_add` is fused in both;
/// only the width of the registers the loops are vectorised over differs.
macro_rules! dispatch {
    ($name:ident, $generic:ident($($arg:ident: $ty:ty),*)) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
        fn avx512($($arg: $ty),*) {
            $generic::<true>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn $name($($arg: $ty),*) {
            $generic::<true>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        if has_avx512() {
            #[allow(unsafe_code)]
            // SAFETY: the CPU supports these AVX-512 subsets, AVX2 and FMA, checked just above.
            unsafe { avx512($($arg),*) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            #[allow(unsafe_code)]
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            unsafe { $name($($arg),*) };
            return;
        }
        $generic::<false>($($arg),*)
    };
}

/// `a * b + c`, fused when the caller is compiled with FMA.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// [`matmul`] for a linear layer on a few rows, with the columns of `c` split over
/// `threads` (at most 2) threads.
///
/// One short query cannot be split by sentence, so the second core would sit idle while
/// the first streams every weight: here each thread streams half of the weight columns.
/// The second half is computed into a buffer of its own and copied in (a few thousand
/// floats), so no two threads ever write one slice. Other shapes take [`matmul`] as is.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_columns(
    a: &[f32],
    av: View,
    b: &[f32],
    bv: View,
    c: &mut [f32],
    cv: View,
    accumulate: bool,
    threads: usize,
) {
    let n = cv.cols;
    if threads < 2 || cv.rows > SMALL_M || bv.col_stride != 1 || cv.col_stride != 1 || n < 256 {
        matmul(a, av, b, bv, c, cv, accumulate);
        return;
    }
    let half = n / 2;
    let m = cv.rows;
    // The right half's own destination, starting from c's values when accumulating.
    let mut right = vec![0f32; m * (n - half)];
    if accumulate {
        for i in 0..m {
            let start = cv.offset + i * cv.row_stride + half;
            right[i * (n - half)..(i + 1) * (n - half)].copy_from_slice(&c[start..start + n - half]);
        }
    }
    let b_right =
        View { offset: bv.offset + half, rows: bv.rows, cols: n - half, row_stride: bv.row_stride, col_stride: 1 };
    let b_left = View { cols: half, ..bv };
    let c_left = View { cols: half, ..cv };
    std::thread::scope(|scope| {
        let right = &mut right;
        scope.spawn(move || matmul(a, av, b, b_right, right, View::dense(0, m, n - half), accumulate));
        matmul(a, av, b, b_left, c, c_left, accumulate);
    });
    for i in 0..m {
        let start = cv.offset + i * cv.row_stride + half;
        c[start..start + n - half].copy_from_slice(&right[i * (n - half)..(i + 1) * (n - half)]);
    }
}

/// Up to this many rows of `a`, [`matmul`] streams `b` once instead of packing it.
///
/// A recall embeds one short query: `a` has a dozen rows while `b` is a weight matrix of up
/// to 1536 × 384. matrixmultiply copies `b` into packed panels on every call, so for a
/// few rows the copy costs more than the product and the weights cross the memory bus
/// twice. Here each group of four rows of `b` is read once and applied to every row of `c`
/// (which stays in cache), so a short query reads each weight once.
const SMALL_M: usize = 24;

fn small_m(a: &[f32], av: View, b: &[f32], bv: View, c: &mut [f32], cv: View, accumulate: bool) {
    dispatch!(small_m_avx2, small_m_impl(a: &[f32], av: View, b: &[f32], bv: View, c: &mut [f32], cv: View, accumulate: bool));
}

#[inline(always)]
fn small_m_impl<const FMA: bool>(a: &[f32], av: View, b: &[f32], bv: View, c: &mut [f32], cv: View, accumulate: bool) {
    let (m, n, k) = (cv.rows, cv.cols, av.cols);
    let a_at = |i: usize, p: usize| a[av.offset + i * av.row_stride + p * av.col_stride];
    let b_row = |p: usize| &b[bv.offset + p * bv.row_stride..bv.offset + p * bv.row_stride + n];
    for i in 0..m {
        if !accumulate {
            let start = cv.offset + i * cv.row_stride;
            c[start..start + n].fill(0.0);
        }
    }
    let mut p = 0;
    while p + 4 <= k {
        let (b0, b1, b2, b3) = (b_row(p), b_row(p + 1), b_row(p + 2), b_row(p + 3));
        for i in 0..m {
            let (x0, x1, x2, x3) = (a_at(i, p), a_at(i, p + 1), a_at(i, p + 2), a_at(i, p + 3));
            let start = cv.offset + i * cv.row_stride;
            let row = &mut c[start..start + n];
            for ((((out, &y0), &y1), &y2), &y3) in row.iter_mut().zip(b0).zip(b1).zip(b2).zip(b3) {
                *out = madd::<FMA>(x3, y3, madd::<FMA>(x2, y2, madd::<FMA>(x1, y1, madd::<FMA>(x0, y0, *out))));
            }
        }
        p += 4;
    }
    while p < k {
        let b0 = b_row(p);
        for i in 0..m {
            let x0 = a_at(i, p);
            let start = cv.offset + i * cv.row_stride;
            for (out, &y0) in c[start..start + n].iter_mut().zip(b0) {
                *out = madd::<FMA>(x0, y0, *out);
            }
        }
        p += 1;
    }
}

/// A linear layer's weights in int8 with a scale per output column and group of
/// [`GROUP`] input rows, multiplied by activations in int8 ([`matmul_q8`]).
///
/// `w[p][j] ≈ q[p][j] · s[p / GROUP][j]`, with `s[g][j]` the largest `|w[p][j]|` of the
/// group over 127 (symmetric, round to nearest). One scale per whole column (per-channel)
/// was measured first: cosine to the f32 vectors 0.9965 on the shortest reference
/// sentences, under the 0.999 we require; groups of 32 rows keep outliers from setting
/// the step of a whole column.
///
/// The layout is the one `vpdpbusd` reads: columns in panels of [`PANEL`], and in a panel,
/// for each four consecutive input rows (a *quad*), each column's four bytes side by side,
/// so one 64-byte load holds four rows of sixteen columns. A panel holds whole groups
/// (`groups · GROUP / 4` quads), so that AMX can load any group's eight quads as one tile;
/// rows beyond `k` and columns beyond `n` are zero. Beside each group's scales, `offsets`
/// holds `128 · Σ q[p][j]` over the group: the activations are stored offset by 128
/// (`vpdpbusd` multiplies unsigned bytes by signed ones), and that offset adds exactly this
/// much to every sum (AMX multiplies signed bytes by signed ones and needs no offset).
#[derive(Debug, Clone)]
pub(crate) struct QMatrix {
    k: usize,
    n: usize,
    /// `⌈k / 4⌉`.
    quads: usize,
    /// `⌈k / GROUP⌉`.
    groups: usize,
    /// Quads per panel in `data`: `groups · GROUP_QUADS` (≥ `quads`; the rest are zero).
    panel_quads: usize,
    /// Panel `q`, quad `t`, column `j`, byte `b` at `((q·panel_quads + t)·PANEL + j)·4 + b`.
    data: Vec<i8>,
    /// Panel `q`, group `g`, column `j` at `(q·groups + g)·PANEL + j`.
    scales: Vec<f32>,
    /// `128 · Σ q[p][j]` over the group, indexed as `scales`.
    offsets: Vec<i32>,
}

/// Columns per panel of a [`QMatrix`]: one AVX-512 register of 32-bit sums, two AVX2 ones.
const PANEL: usize = 16;
/// Rows of a tile of [`matmul_q8`]: four rows share each load of the weights.
const TILE_ROWS: usize = 4;
/// Input rows that share one scale per column, in the weights and in the activations.
const GROUP: usize = 32;
/// Quads per group.
const GROUP_QUADS: usize = GROUP / 4;
/// Activation rows multiplied by every panel before the next rows: a block of a long
/// document batch (64 rows of at most 1536 bytes) stays in L2 while the panels pass over it.
const ROW_BLOCK: usize = 64;
/// Rows of an AMX tile of activations (the most a tile holds).
const AMX_ROWS: usize = 16;

impl QMatrix {
    /// Quantises a row-major `k × n` matrix; `None` when it is empty or holds a non-finite
    /// value.
    pub(crate) fn quantize(w: &[f32], k: usize, n: usize) -> Option<Self> {
        if n == 0 || k == 0 || w.len() != k * n || !w.iter().all(|x| x.is_finite()) {
            return None;
        }
        let (quads, groups, panels) = (k.div_ceil(4), k.div_ceil(GROUP), n.div_ceil(PANEL));
        let panel_quads = groups * GROUP_QUADS;
        let mut data = vec![0i8; panels * panel_quads * PANEL * 4];
        let mut scales = vec![0f32; panels * groups * PANEL];
        let mut offsets = vec![0i32; panels * groups * PANEL];
        for j in 0..n {
            let (panel, column) = (j / PANEL, j % PANEL);
            for g in 0..groups {
                let rows = g * GROUP..((g + 1) * GROUP).min(k);
                let largest = rows.clone().map(|p| w[p * n + j].abs()).fold(0f32, f32::max);
                let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
                let mut sum = 0i32;
                for p in rows {
                    let code = (w[p * n + j] / scale).round().clamp(-127.0, 127.0) as i8;
                    data[((panel * panel_quads + p / 4) * PANEL + column) * 4 + p % 4] = code;
                    sum += i32::from(code);
                }
                let at = (panel * groups + g) * PANEL + column;
                scales[at] = scale;
                offsets[at] = 128 * sum;
            }
        }
        Some(Self { k, n, quads, groups, panel_quads, data, scales, offsets })
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.data.len() + 4 * (self.scales.len() + self.offsets.len())
    }

    /// The weight as quantised, `q[p][j] · s[p / GROUP][j]` (for tests).
    #[cfg(test)]
    fn dequantized(&self, p: usize, j: usize) -> f32 {
        let (panel, column) = (j / PANEL, j % PANEL);
        let code = self.data[((panel * self.panel_quads + p / 4) * PANEL + column) * 4 + p % 4];
        f32::from(code) * self.scales[(panel * self.groups + p / GROUP) * PANEL + column]
    }
}

/// The ways [`matmul_q8`] can multiply, one per instruction set; every path gives
/// bit-identical results (the sums are exact integers, and each is scaled into the f32
/// result by one fused multiply-add in the same order), so which one runs changes speed
/// only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Int8Path {
    /// AMX-INT8: `tdpbssd` on tiles of 16 rows × one group of 32 inputs × 16 columns, the
    /// group sums scaled by AVX-512 (Linux only: the process asks the kernel for the tile
    /// state first).
    Amx,
    /// Scalar 32-bit integer arithmetic; any CPU.
    Portable,
    /// AVX2: bytes widened to 16 bits, `vpmaddwd` (two products a lane, exact).
    Avx2,
    /// AVX-VNNI: `vpdpbusd` on 256-bit registers (four products a lane).
    AvxVnni,
    /// AVX-512 VNNI: `vpdpbusd` on 512-bit registers.
    Avx512Vnni,
}

impl Int8Path {
    /// Every path, in order of preference (fastest first, as measured on a Sapphire Rapids
    /// Xeon, which has all of them).
    pub(crate) const ALL: [Self; 5] = [Self::Amx, Self::Avx512Vnni, Self::AvxVnni, Self::Avx2, Self::Portable];

    /// The path's name, as `kernel_paths` reports it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Amx => "amx-int8",
            Self::Portable => "portable",
            Self::Avx2 => "avx2",
            Self::AvxVnni => "avx-vnni",
            Self::Avx512Vnni => "avx512-vnni",
        }
    }

    /// The first CPU feature this path needs that this CPU lacks; `None` when it can run.
    pub(crate) fn missing_feature(self) -> Option<&'static str> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let needs: &[(&str, bool)] = match self {
                Self::Portable => &[],
                Self::Avx2 => &[("avx2", has!("avx2")), ("fma", has!("fma"))],
                Self::AvxVnni => &[("avx2", has!("avx2")), ("fma", has!("fma")), ("avxvnni", has!("avxvnni"))],
                Self::Avx512Vnni => &[
                    ("avx512f", has!("avx512f")),
                    ("avx512bw", has!("avx512bw")),
                    ("avx512vnni", has!("avx512vnni")),
                    ("fma", has!("fma")),
                ],
                Self::Amx => &[
                    ("avx512f", has!("avx512f")),
                    ("avx512bw", has!("avx512bw")),
                    ("fma", has!("fma")),
                    ("amx-int8 with the kernel's permission", amx::ready()),
                ],
            };
            needs.iter().find(|(_, present)| !present).map(|(name, _)| *name)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            if self == Self::Portable { None } else { Some("x86_64") }
        }
    }
}

/// The environment variable that forces the encoder's int8 path (for benchmarks: how a CPU
/// without AMX, or without VNNI, would fare); a path the CPU lacks, or an unknown name, is
/// logged and ignored. Every path gives the same sums, so it changes speed, never vectors.
pub const EMBED_KERNEL_ENV: &str = "MEMBANK_EMBED_KERNEL";

/// The int8 path this CPU runs: the first of [`Int8Path::ALL`] it supports, or the one
/// [`EMBED_KERNEL_ENV`] names when the CPU has it; chosen (and logged, once, at info level)
/// on first use.
pub(crate) fn int8_path() -> Int8Path {
    static PATH: std::sync::OnceLock<Int8Path> = std::sync::OnceLock::new();
    *PATH.get_or_init(|| {
        let best = Int8Path::ALL.into_iter().find(|p| p.missing_feature().is_none()).unwrap_or(Int8Path::Portable);
        let path = match std::env::var(EMBED_KERNEL_ENV) {
            Ok(wanted) => match Int8Path::ALL.into_iter().find(|p| p.name() == wanted) {
                Some(p) => match p.missing_feature() {
                    None => p,
                    Some(feature) => {
                        tracing::warn!(
                            "{EMBED_KERNEL_ENV}={wanted}: this CPU lacks {feature}; the encoder uses {}",
                            best.name()
                        );
                        best
                    }
                },
                None => {
                    let names: Vec<&str> = Int8Path::ALL.iter().map(|p| p.name()).collect();
                    tracing::warn!(
                        "{EMBED_KERNEL_ENV}={wanted} is not an int8 path ({}); the encoder uses {}",
                        names.join(", "),
                        best.name()
                    );
                    best
                }
            },
            Err(_) => best,
        };
        tracing::info!(int8 = path.name(), f32 = f32_path(), "embedding kernels chosen");
        path
    })
}

/// The path of the f32 products and element-wise kernels: matrixmultiply's and our own
/// AVX-512 or AVX2 code with FMA, or the baseline target's.
pub(crate) fn f32_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if has_avx512() {
        return "avx512+fma";
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        return "avx2+fma";
    }
    "portable"
}

/// Activation rows in int8, a scale per row and [`GROUP`], each code stored plus 128 as a
/// byte (the unsigned operand of `vpdpbusd`); rows padded to whole quads with code 0 (byte
/// 128). `wide` holds the same bytes as 16-bit lanes, for the AVX2 path only.
///
/// On the AMX path the bytes are the codes themselves (`tdpbssd` multiplies signed bytes,
/// so no offset is needed), rows are padded to whole groups and there are zero rows (and
/// zero scales) up to a multiple of [`AMX_ROWS`], so that every tile has one shape.
///
/// Each row's [`OUTLIERS`] largest magnitudes are left out of the codes (code 0) and kept
/// in f32 in `outliers`, to be multiplied by the f32 weights: BERT's hidden states have a
/// few dimensions five to ten times larger than the rest, and one of them in a group would
/// set that group's step for all 32 values.
#[derive(Debug, Default)]
struct QRows {
    stride: usize,
    codes: Vec<u8>,
    wide: Vec<u16>,
    scales: Vec<f32>,
    /// `OUTLIERS` (input row, value) pairs per row, largest first.
    outliers: Vec<(u32, f32)>,
}

/// Activations per row kept in f32 (see [`QRows`]).
const OUTLIERS: usize = 4;

impl QRows {
    fn quantize(a: &[f32], m: usize, k: usize, path: Int8Path) -> Self {
        let groups = k.div_ceil(GROUP);
        let (stride, padded, offset) = if path == Int8Path::Amx {
            (groups * GROUP, m.next_multiple_of(AMX_ROWS), 0)
        } else {
            (k.div_ceil(4) * 4, m, 128)
        };
        let mut rows = Self {
            stride,
            codes: vec![offset; padded * stride],
            wide: Vec::new(),
            scales: vec![0.0; padded * groups],
            outliers: vec![(0, 0.0); m * OUTLIERS],
        };
        quantize_rows(a, k, &mut rows.codes, stride, offset, &mut rows.scales, &mut rows.outliers);
        if path == Int8Path::Avx2 {
            rows.wide = rows.codes.iter().map(|&b| u16::from(b)).collect();
        }
        rows
    }
}

/// Fills `codes` (rows of `stride` bytes, each code plus `offset` modulo 256), `scales` (a
/// row of `⌈k / GROUP⌉` each) and `outliers` (a row of [`OUTLIERS`] each) from the rows of
/// `a` (`k` long): symmetric, round to nearest, the largest magnitude of each row's group
/// (outliers left out) to ±127. Bytes past `k` in a row, and rows past `a`'s, are left as
/// they are.
#[allow(clippy::too_many_arguments)]
fn quantize_rows(
    a: &[f32],
    k: usize,
    codes: &mut [u8],
    stride: usize,
    offset: u8,
    scales: &mut [f32],
    outliers: &mut [(u32, f32)],
) {
    dispatch!(quantize_rows_avx2, quantize_rows_impl(a: &[f32], k: usize, codes: &mut [u8], stride: usize, offset: u8, scales: &mut [f32], outliers: &mut [(u32, f32)]));
}

#[inline(always)]
fn quantize_rows_impl<const FMA: bool>(
    a: &[f32],
    k: usize,
    codes: &mut [u8],
    stride: usize,
    offset: u8,
    scales: &mut [f32],
    outliers: &mut [(u32, f32)],
) {
    // Adding 1.5 · 2^23 rounds a float below 2^22 to an integer (ties to even) that lands
    // in the low mantissa bits; plain arithmetic, so the loop vectorises (`round` does not).
    const ROUNDER: f32 = 12_582_912.0;
    // The largest magnitude, compared as bits (the order of non-negative floats), which
    // vectorises where a float maximum does not.
    let largest = |values: &[f32]| f32::from_bits(values.iter().map(|x| x.to_bits() & 0x7fff_ffff).max().unwrap_or(0));
    let groups = k.div_ceil(GROUP);
    // The row with its outliers zeroed, which is what gets quantised.
    let mut kept = vec![0f32; k];
    let rows = a.chunks_exact(k).zip(codes.chunks_exact_mut(stride));
    for ((row, out), (row_scales, row_outliers)) in
        rows.zip(scales.chunks_exact_mut(groups).zip(outliers.chunks_exact_mut(OUTLIERS)))
    {
        kept.copy_from_slice(row);
        for (group, scale) in kept.chunks(GROUP).zip(row_scales.iter_mut()) {
            *scale = largest(group);
        }
        // The outliers: the largest group maximum, its first element of that magnitude,
        // that group's maximum again without it; a row of zeros gives (0, 0.0) pairs.
        for slot in row_outliers.iter_mut() {
            let (g, &top) =
                row_scales.iter().enumerate().fold((0, &0f32), |best, (g, m)| if *m > *best.1 { (g, m) } else { best });
            if top == 0.0 {
                break;
            }
            let group = &mut kept[g * GROUP..((g + 1) * GROUP).min(k)];
            let at = group.iter().position(|x| x.abs() == top).unwrap_or(0);
            *slot = ((g * GROUP + at) as u32, group[at]);
            group[at] = 0.0;
            row_scales[g] = largest(group);
        }
        for ((group, out), scale) in kept.chunks(GROUP).zip(out.chunks_mut(GROUP)).zip(row_scales.iter_mut()) {
            let inverse = if *scale > 0.0 { 127.0 / *scale } else { 0.0 };
            for (byte, &x) in out.iter_mut().zip(group) {
                let code = ((x * inverse + ROUNDER).to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
                *byte = (code.clamp(-127, 127) as u8).wrapping_add(offset);
            }
            *scale /= 127.0;
        }
    }
}

/// `c += a · w` for `m` dense rows of `a` (`m × k`) and `c` (`m × n`), with `w` in int8
/// and each row of `a` quantised to int8 on the fly (a scale per row and [`GROUP`]).
///
/// Every output element is computed the same way whatever `m` is, however the columns are
/// split over threads, and on every [`Int8Path`]: the exact integer sum of each group,
/// scaled into a per-tile f32 sum by a fused multiply-add in group order, then added to
/// `c` — so a query embedded alone and inside a batch of other queries gets bit-identical
/// numbers. With `threads ≥ 2` the panels are split in two halves, the right half computed
/// into a buffer of its own and copied in (as [`matmul_columns`] does).
///
/// Panics (a bug in this crate) when the slices are shorter than the shapes say.
pub(crate) fn matmul_q8(a: &[f32], m: usize, w: &QMatrix, w_f32: &[f32], c: &mut [f32], threads: usize) {
    #[cfg(test)]
    let path = FORCED_PATH.with(std::cell::Cell::get).unwrap_or_else(int8_path);
    #[cfg(not(test))]
    let path = int8_path();
    matmul_q8_on(path, a, m, w, w_f32, c, threads);
}

#[cfg(test)]
thread_local! {
    /// The path [`matmul_q8`] takes on this thread instead of the CPU's best, so that tests
    /// can run a whole forward pass on each path.
    pub(crate) static FORCED_PATH: std::cell::Cell<Option<Int8Path>> = const { std::cell::Cell::new(None) };
}

/// [`matmul_q8`] on the given path. Panics if the CPU lacks what the path needs.
pub(crate) fn matmul_q8_on(
    path: Int8Path,
    a: &[f32],
    m: usize,
    w: &QMatrix,
    w_f32: &[f32],
    c: &mut [f32],
    threads: usize,
) {
    let (k, n) = (w.k, w.n);
    assert!(a.len() >= m * k && c.len() >= m * n, "matmul_q8: slices shorter than the shapes");
    assert_eq!(w_f32.len(), k * n, "matmul_q8: the f32 weights are not k × n");
    assert!(path.missing_feature().is_none(), "matmul_q8: the CPU cannot run the {} path", path.name());
    if m == 0 {
        return;
    }
    let rows = QRows::quantize(&a[..m * k], m, k, path);
    let panels = n.div_ceil(PANEL);
    let weights = Weights { q: w, f32: w_f32 };
    // Splitting the columns over a second thread cost a thread started for each product,
    // and only the scalar path was slow enough to pay for it. A lone 12-token query's 24
    // products of MiniLM (`split_timing` below, an Intel Xeon with AMX), one thread against
    // two: AMX 1.06 against 3.09 ms, AVX-512 VNNI 1.29 / 2.50, AVX-VNNI 1.8 / 3.0, AVX2
    // 3.2 / 3.7, portable 61 / 32 ms. With the kept helper thread ([`helper`]) a lone short
    // text's products split on every path; longer batches come under load, when the
    // other core is busy anyway, and stay on one thread but on the scalar path.
    let lone = m <= LONE_TOKENS;
    if threads < 2 || panels < 4 || (path != Int8Path::Portable && !lone) {
        q8_panels(path, &rows, m, weights, 0, panels, c, n, 0);
    } else {
        q8_panels_split(path, &rows, m, weights, panels, c);
    }
}

/// At most this many tokens in a product make it a lone short text's ([`matmul_q8_on`]).
const LONE_TOKENS: usize = 32;

/// A linear layer's weights in int8, and in f32 for the activations' outliers.
#[derive(Clone, Copy)]
struct Weights<'a> {
    q: &'a QMatrix,
    f32: &'a [f32],
}

/// `c[i][j] += Σ_o value_o · w[index_o][first + j]` for `j < width` over each row's
/// [`OUTLIERS`] (index, value) pairs, added one after the other in their order, a product
/// rounded before each sum (no fused multiply-add: the same numbers whichever build runs);
/// `c`'s rows are `ldc` apart, `w`'s `n` long.
///
/// The products call it for each block of rows right after its panels, while those rows
/// of `c` are still in cache (one pass after the whole product read and wrote every row of
/// `c` again from memory: 9 % of a document batch).
fn add_outliers(c: &mut [f32], ldc: usize, first: usize, width: usize, outliers: &[(u32, f32)], w: Weights<'_>) {
    let (n, w_f32) = (w.q.n, w.f32);
    dispatch!(add_outliers_avx2, add_outliers_impl(c: &mut [f32], ldc: usize, first: usize, width: usize, n: usize, outliers: &[(u32, f32)], w_f32: &[f32]));
}

/// One pass over each row for all four outliers (four passes read and wrote `c` four times).
#[inline(always)]
fn add_outliers_impl<const FMA: bool>(
    c: &mut [f32],
    ldc: usize,
    first: usize,
    width: usize,
    n: usize,
    outliers: &[(u32, f32)],
    w_f32: &[f32],
) {
    const _: () = assert!(OUTLIERS == 4, "add_outliers_impl is written for four outliers a row");
    if width == 0 {
        return;
    }
    let weights = |index: u32| &w_f32[index as usize * n + first..][..width];
    for (r, kept) in outliers.chunks_exact(OUTLIERS).enumerate() {
        let row = &mut c[r * ldc..][..width];
        let [(i0, v0), (i1, v1), (i2, v2), (i3, v3)] = [kept[0], kept[1], kept[2], kept[3]];
        let (w0, w1, w2, w3) = (weights(i0), weights(i1), weights(i2), weights(i3));
        for ((((x, &a), &b), &c), &d) in row.iter_mut().zip(w0).zip(w1).zip(w2).zip(w3) {
            *x = *x + v0 * a + v1 * b + v2 * c + v3 * d;
        }
    }
}

/// The outliers of rows `block..block_end` at panels `from..to`, into `c` as [`q8_panels`]
/// lays it out.
#[allow(clippy::too_many_arguments)]
fn add_block_outliers(
    rows: &QRows,
    w: Weights<'_>,
    block: usize,
    block_end: usize,
    from: usize,
    to: usize,
    c: &mut [f32],
    ldc: usize,
    column0: usize,
) {
    let first = from * PANEL;
    let width = (to * PANEL).min(w.q.n).saturating_sub(first);
    let outliers = &rows.outliers[block * OUTLIERS..block_end * OUTLIERS];
    add_outliers(&mut c[block * ldc + first - column0..], ldc, first, width, outliers, w);
}

/// [`q8_panels`] over two threads: the right half of the panels into a buffer of its own.
fn q8_panels_split(path: Int8Path, rows: &QRows, m: usize, w: Weights<'_>, panels: usize, c: &mut [f32]) {
    let n = w.q.n;
    let split = panels / 2;
    let first_right = split * PANEL;
    let width = n - first_right;
    let mut right = vec![0f32; m * width];
    for i in 0..m {
        right[i * width..(i + 1) * width].copy_from_slice(&c[i * n + first_right..(i + 1) * n]);
    }
    {
        let (right, rows, left) = (&mut right, &rows, &mut *c);
        helper::join(
            move || q8_panels(path, rows, m, w, split, panels, right, width, first_right),
            move || q8_panels(path, rows, m, w, 0, split, left, n, 0),
        );
    }
    for i in 0..m {
        c[i * n + first_right..(i + 1) * n].copy_from_slice(&right[i * width..(i + 1) * width]);
    }
}

/// One thread kept for the right half of a product's columns ([`q8_panels_split`]).
///
/// A thread started per product cost about 50 µs to start and join here, more than a lone
/// query's product takes. This one is started once, waits for work by spinning briefly
/// (a forward pass hands it a product every few tens of microseconds) and then sleeping,
/// and serves one caller at a time: a caller that finds it taken runs both halves itself,
/// and one that finishes its half before the helper started the other takes it back.
#[allow(unsafe_code)]
mod helper {
    use std::any::Any;
    use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
    use std::time::{Duration, Instant};

    /// How long the helper spins for its next job, and a caller for the helper's half,
    /// before sleeping.
    const SPIN: Duration = Duration::from_micros(200);

    type Job = Box<dyn FnOnce() + Send + 'static>;

    #[derive(Default)]
    struct State {
        job: Option<Job>,
        done: bool,
        panic: Option<Box<dyn Any + Send>>,
    }

    #[derive(Default)]
    struct Helper {
        claimed: AtomicBool,
        has_job: AtomicBool,
        finished: AtomicBool,
        state: Mutex<State>,
        wake_helper: Condvar,
        wake_caller: Condvar,
    }

    fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
        // No code panics while holding the lock (jobs run outside it).
        state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The helper, started on first use; `None` if its thread could not be started.
    fn helper() -> Option<&'static Helper> {
        static HELPER: OnceLock<Option<&'static Helper>> = OnceLock::new();
        *HELPER.get_or_init(|| {
            let helper: &'static Helper = Box::leak(Box::default());
            std::thread::Builder::new().name("membank-products".into()).spawn(move || serve(helper)).ok()?;
            Some(helper)
        })
    }

    fn serve(helper: &'static Helper) {
        loop {
            let start = Instant::now();
            while !helper.has_job.load(Ordering::Acquire) && start.elapsed() < SPIN {
                std::hint::spin_loop();
            }
            let job = {
                let mut state = lock(&helper.state);
                loop {
                    if let Some(job) = state.job.take() {
                        break job;
                    }
                    state = helper.wake_helper.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            };
            helper.has_job.store(false, Ordering::Relaxed);
            let outcome = catch_unwind(AssertUnwindSafe(job));
            let mut state = lock(&helper.state);
            state.panic = outcome.err();
            state.done = true;
            helper.finished.store(true, Ordering::Release);
            drop(state);
            helper.wake_caller.notify_one();
        }
    }

    /// Runs `there` on the helper and `here` on this thread, and returns when both are
    /// done (a panic in either is passed on after both finished); both here, one after
    /// the other, when the helper is busy with another caller or could not be started, and
    /// `there` here too when the helper has not started it by the time `here` is done (on
    /// busy cores a handed-off half would otherwise wait for the scheduler).
    pub(super) fn join(there: impl FnOnce() + Send, here: impl FnOnce()) {
        let Some(helper) =
            helper().filter(|h| h.claimed.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok())
        else {
            there();
            here();
            return;
        };
        let job: Box<dyn FnOnce() + Send + '_> = Box::new(there);
        // SAFETY: only the lifetime changes (the same fat pointer). The job borrows from
        // this call's caller; this function does not return, nor unwind, before the helper
        // has run the job to its end (consuming the box) and said so under the lock.
        let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
        {
            let mut state = lock(&helper.state);
            state.job = Some(job);
            state.done = false;
            helper.finished.store(false, Ordering::Relaxed);
        }
        helper.has_job.store(true, Ordering::Release);
        helper.wake_helper.notify_one();
        let here = catch_unwind(AssertUnwindSafe(here));
        // Not started yet (its thread not scheduled: the cores are busy): run it here
        // instead of waiting for a core.
        let reclaimed = lock(&helper.state).job.take();
        if let Some(job) = reclaimed {
            helper.has_job.store(false, Ordering::Relaxed);
            let there = catch_unwind(AssertUnwindSafe(job));
            helper.claimed.store(false, Ordering::Release);
            if let Err(panic) = here.and(there) {
                resume_unwind(panic);
            }
            return;
        }
        let start = Instant::now();
        while !helper.finished.load(Ordering::Acquire) && start.elapsed() < SPIN {
            std::hint::spin_loop();
        }
        let panic = {
            let mut state = lock(&helper.state);
            while !state.done {
                state = helper.wake_caller.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
            state.panic.take()
        };
        helper.claimed.store(false, Ordering::Release);
        if let Err(panic) = here {
            resume_unwind(panic);
        }
        if let Some(panic) = panic {
            resume_unwind(panic);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Both halves run, write what they borrow, and a caller that finds the helper
        /// taken runs both itself; many callers at once lose nothing.
        #[test]
        fn both_halves_run_whoever_runs_them() {
            let results: Vec<(u64, u64)> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..8u64)
                    .map(|t| {
                        scope.spawn(move || {
                            let mut total = (0, 0);
                            for i in 0..200u64 {
                                let (mut a, mut b) = (0u64, 0u64);
                                join(|| a = t * 1000 + i, || b = i + 1);
                                total.0 += a;
                                total.1 += b;
                            }
                            total
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("no panic")).collect()
            });
            for (t, (a, b)) in results.into_iter().enumerate() {
                let t = t as u64;
                assert_eq!(a, (0..200).map(|i| t * 1000 + i).sum::<u64>());
                assert_eq!(b, (1..=200).sum::<u64>());
            }
        }

        /// A panic on either side reaches the caller after both sides finished, and the
        /// helper serves the next caller.
        #[test]
        fn a_panic_on_either_side_reaches_the_caller() {
            let mut other = 0;
            let there = catch_unwind(AssertUnwindSafe(|| join(|| panic!("there"), || other = 1)));
            assert!(there.is_err());
            assert_eq!(other, 1);
            let mut other = 0;
            let here = catch_unwind(AssertUnwindSafe(|| join(|| other = 2, || panic!("here"))));
            assert!(here.is_err());
            assert_eq!(other, 2);
            let (mut a, mut b) = (0, 0);
            join(|| a = 3, || b = 4);
            assert_eq!((a, b), (3, 4));
        }
    }
}

/// Panels `from..to` of `w` into `c`, whose rows are `ldc` long and whose column 0 is
/// `w`'s column `column0`, each block of rows followed by its outliers.
#[allow(clippy::too_many_arguments)]
fn q8_panels(
    path: Int8Path,
    rows: &QRows,
    m: usize,
    weights: Weights<'_>,
    from: usize,
    to: usize,
    c: &mut [f32],
    ldc: usize,
    column0: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if path == Int8Path::Amx {
        amx::panels(rows, m, weights, from, to, c, ldc, column0);
        return;
    }
    let w = weights.q;
    let (stride, groups, quads) = (rows.stride, w.groups, w.quads);
    let mut block = 0;
    while block < m {
        let block_end = (block + ROW_BLOCK).min(m);
        for panel in from..to {
            let j0 = panel * PANEL;
            let width = PANEL.min(w.n - j0);
            let mut i = block;
            while i < block_end {
                let count = TILE_ROWS.min(block_end - i);
                let tile = Tile {
                    codes: &rows.codes[i * stride..(i + count) * stride],
                    wide: if rows.wide.is_empty() { &[] } else { &rows.wide[i * stride..(i + count) * stride] },
                    stride,
                    row_scales: &rows.scales[i * groups..(i + count) * groups],
                    groups,
                    quads,
                    data: &w.data[panel * w.panel_quads * PANEL * 4..][..quads * PANEL * 4],
                    scales: &w.scales[panel * groups * PANEL..(panel + 1) * groups * PANEL],
                    offsets: &w.offsets[panel * groups * PANEL..(panel + 1) * groups * PANEL],
                };
                let mut out = [[0f32; PANEL]; TILE_ROWS];
                run_tile(path, &tile, count, &mut out);
                for (r, sums) in out.iter().enumerate().take(count) {
                    let start = (i + r) * ldc + (j0 - column0);
                    for (x, &sum) in c[start..start + width].iter_mut().zip(sums) {
                        *x += sum;
                    }
                }
                i += count;
            }
        }
        add_block_outliers(rows, weights, block, block_end, from, to, c, ldc, column0);
        block = block_end;
    }
}

/// One tile's operands: up to [`TILE_ROWS`] quantised rows and one panel of weights.
struct Tile<'a> {
    /// `rows · stride` bytes.
    codes: &'a [u8],
    /// The same as 16-bit lanes (AVX2 path only; else empty).
    wide: &'a [u16],
    stride: usize,
    /// `rows · groups`.
    row_scales: &'a [f32],
    groups: usize,
    quads: usize,
    /// `quads · PANEL · 4` bytes.
    data: &'a [i8],
    /// `groups · PANEL` each.
    scales: &'a [f32],
    offsets: &'a [i32],
}

/// `out[r][j] = Σ_g (sum of group g as f32) · (row scale · column scale)`, fused
/// multiply-adds in group order, for `rows` (1–4) rows of the tile, on `path`.
fn run_tile(path: Int8Path, tile: &Tile<'_>, rows: usize, out: &mut [[f32; PANEL]; TILE_ROWS]) {
    // The lengths every path relies on (the unsafe ones read through raw pointers).
    assert!((1..=TILE_ROWS).contains(&rows) && tile.stride >= 4 * tile.quads);
    assert!(tile.codes.len() >= rows * tile.stride && tile.row_scales.len() >= rows * tile.groups);
    assert!(tile.data.len() == tile.quads * PANEL * 4 && tile.groups == tile.quads.div_ceil(GROUP_QUADS));
    assert!(tile.scales.len() == tile.groups * PANEL && tile.offsets.len() == tile.groups * PANEL);
    macro_rules! rows {
        ($kernel:ident) => {
            match rows {
                1 => $kernel::<1>(tile, out),
                2 => $kernel::<2>(tile, out),
                3 => $kernel::<3>(tile, out),
                _ => $kernel::<4>(tile, out),
            }
        };
    }
    match path {
        // AMX multiplies whole tiles of its own (`amx::panels`); a tile of four rows is
        // the portable one's.
        Int8Path::Portable | Int8Path::Amx => rows!(tile_portable),
        #[cfg(target_arch = "x86_64")]
        Int8Path::Avx2 => {
            assert!(tile.wide.len() >= rows * tile.stride, "the AVX2 path needs the 16-bit activations");
            #[allow(unsafe_code)]
            // SAFETY: `matmul_q8_on` checked that the CPU has AVX2 and FMA; the asserts above
            // bound every read the kernel makes.
            unsafe {
                rows!(tile_avx2)
            }
        }
        #[cfg(target_arch = "x86_64")]
        Int8Path::AvxVnni => {
            #[allow(unsafe_code)]
            // SAFETY: as above, with AVX-VNNI checked.
            unsafe {
                rows!(tile_avx_vnni)
            }
        }
        #[cfg(target_arch = "x86_64")]
        Int8Path::Avx512Vnni => {
            #[allow(unsafe_code)]
            // SAFETY: as above, with AVX-512 F, BW and VNNI checked.
            unsafe {
                rows!(tile_avx512_vnni)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("matmul_q8_on refuses x86 paths elsewhere"),
    }
}

/// The reference: 32-bit integer sums, one element at a time.
fn tile_portable<const R: usize>(tile: &Tile<'_>, out: &mut [[f32; PANEL]; TILE_ROWS]) {
    for (r, out) in out.iter_mut().enumerate().take(R) {
        let codes = &tile.codes[r * tile.stride..(r + 1) * tile.stride];
        for g in 0..tile.groups {
            let quads = g * GROUP_QUADS..((g + 1) * GROUP_QUADS).min(tile.quads);
            let row_scale = tile.row_scales[r * tile.groups + g];
            for (j, out) in out.iter_mut().enumerate() {
                let mut sum = 0i32;
                for t in quads.clone() {
                    for b in 0..4 {
                        sum += i32::from(codes[4 * t + b]) * i32::from(tile.data[(t * PANEL + j) * 4 + b]);
                    }
                }
                let exact = sum - tile.offsets[g * PANEL + j];
                *out = (exact as f32).mul_add(row_scale * tile.scales[g * PANEL + j], *out);
            }
        }
    }
}

/// AVX2: each quad's 64 weight bytes widened to 16 bits (four registers of four columns ×
/// four rows), multiplied by the row's four activations with `vpmaddwd`, which leaves two
/// partial sums per column that are added pairwise (`vphaddd`) at the group's end.
/// `vpmaddubsw` (bytes directly) was not used: its 16-bit sums saturate for 8-bit
/// activations, and keeping them to 7 bits halves their resolution.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(unsafe_code)]
unsafe fn tile_avx2<const R: usize>(tile: &Tile<'_>, out: &mut [[f32; PANEL]; TILE_ROWS]) {
    use std::arch::x86_64::*;
    // SAFETY (whole body): `run_tile` asserted the lengths: quad t of row r < R is at
    // r·stride + 4t (8 bytes of `wide`), the panel's quad t at 64t (64 bytes), group g's
    // scales and offsets at 16g (16 each), and `out` has TILE_ROWS ≥ R rows of 16.
    unsafe {
        let data = tile.data.as_ptr();
        let wide = tile.wide.as_ptr();
        for g in 0..tile.groups {
            let mut acc = [[_mm256_setzero_si256(); 4]; R];
            for t in g * GROUP_QUADS..((g + 1) * GROUP_QUADS).min(tile.quads) {
                let quad = data.add(t * PANEL * 4);
                let mut weights = [_mm256_setzero_si256(); 4];
                for (v, slot) in weights.iter_mut().enumerate() {
                    *slot = _mm256_cvtepi8_epi16(_mm_loadu_si128(quad.add(16 * v).cast()));
                }
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm256_set1_epi64x(wide.add(r * tile.stride + 4 * t).cast::<i64>().read_unaligned());
                    for (slot, &w) in acc.iter_mut().zip(&weights) {
                        *slot = _mm256_add_epi32(*slot, _mm256_madd_epi16(w, x));
                    }
                }
            }
            let scales = tile.scales.as_ptr().add(g * PANEL);
            let offsets = tile.offsets.as_ptr().add(g * PANEL);
            for (r, acc) in acc.iter().enumerate() {
                let row_scale = _mm256_set1_ps(tile.row_scales[r * tile.groups + g]);
                for half in 0..2 {
                    // Lanes (c0 c1 c4 c5 | c2 c3 c6 c7) after the pairwise add; put in order.
                    let pairs = _mm256_hadd_epi32(acc[2 * half], acc[2 * half + 1]);
                    let sums = _mm256_permute4x64_epi64::<0b11_01_10_00>(pairs);
                    let exact = _mm256_sub_epi32(sums, _mm256_loadu_si256(offsets.add(8 * half).cast()));
                    let scale = _mm256_mul_ps(row_scale, _mm256_loadu_ps(scales.add(8 * half)));
                    let slot = out[r].as_mut_ptr().add(8 * half);
                    _mm256_storeu_ps(slot, _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), scale, _mm256_loadu_ps(slot)));
                }
            }
        }
    }
}

/// AVX-VNNI: `vpdpbusd` on two 256-bit registers per row, with the even and odd quads in
/// separate sums so that twice as many are in flight. (Every index into the register
/// arrays is a constant once the loops over `R` are unrolled, so they stay in registers.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,avxvnni")]
#[allow(unsafe_code)]
// One row index addresses several register arrays and the row's codes; it is a constant
// once the loops over `R` are unrolled.
#[allow(clippy::needless_range_loop)]
unsafe fn tile_avx_vnni<const R: usize>(tile: &Tile<'_>, out: &mut [[f32; PANEL]; TILE_ROWS]) {
    use std::arch::x86_64::*;
    // SAFETY (whole body): as in `tile_avx2`, reading 4 bytes of `codes` per row and quad.
    unsafe {
        let data = tile.data.as_ptr();
        let codes = tile.codes.as_ptr();
        let row_code =
            |r: usize, t: usize| _mm256_set1_epi32(codes.add(r * tile.stride + 4 * t).cast::<i32>().read_unaligned());
        let mut totals = [[_mm256_setzero_ps(); 2]; R];
        for g in 0..tile.groups {
            let (mut t, end) = (g * GROUP_QUADS, ((g + 1) * GROUP_QUADS).min(tile.quads));
            let mut even = [[_mm256_setzero_si256(); 2]; R];
            let mut odd = [[_mm256_setzero_si256(); 2]; R];
            while t + 2 <= end {
                let quad = data.add(t * PANEL * 4);
                let (low0, high0) = (_mm256_loadu_si256(quad.cast()), _mm256_loadu_si256(quad.add(32).cast()));
                let (low1, high1) = (_mm256_loadu_si256(quad.add(64).cast()), _mm256_loadu_si256(quad.add(96).cast()));
                for r in 0..R {
                    let (x0, x1) = (row_code(r, t), row_code(r, t + 1));
                    even[r][0] = _mm256_dpbusd_avx_epi32(even[r][0], x0, low0);
                    even[r][1] = _mm256_dpbusd_avx_epi32(even[r][1], x0, high0);
                    odd[r][0] = _mm256_dpbusd_avx_epi32(odd[r][0], x1, low1);
                    odd[r][1] = _mm256_dpbusd_avx_epi32(odd[r][1], x1, high1);
                }
                t += 2;
            }
            if t < end {
                let quad = data.add(t * PANEL * 4);
                let (low, high) = (_mm256_loadu_si256(quad.cast()), _mm256_loadu_si256(quad.add(32).cast()));
                for r in 0..R {
                    let x = row_code(r, t);
                    even[r][0] = _mm256_dpbusd_avx_epi32(even[r][0], x, low);
                    even[r][1] = _mm256_dpbusd_avx_epi32(even[r][1], x, high);
                }
            }
            let scales = tile.scales.as_ptr().add(g * PANEL);
            let offsets = tile.offsets.as_ptr().add(g * PANEL);
            for r in 0..R {
                let row_scale = _mm256_set1_ps(tile.row_scales[r * tile.groups + g]);
                for half in 0..2 {
                    let sums = _mm256_add_epi32(even[r][half], odd[r][half]);
                    let exact = _mm256_sub_epi32(sums, _mm256_loadu_si256(offsets.add(8 * half).cast()));
                    let scale = _mm256_mul_ps(row_scale, _mm256_loadu_ps(scales.add(8 * half)));
                    totals[r][half] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), scale, totals[r][half]);
                }
            }
        }
        for (r, halves) in totals.iter().enumerate() {
            _mm256_storeu_ps(out[r].as_mut_ptr(), halves[0]);
            _mm256_storeu_ps(out[r].as_mut_ptr().add(8), halves[1]);
        }
    }
}

/// AVX-512 VNNI: `vpdpbusd` on one 512-bit register per row (a whole panel), even and odd
/// quads in separate sums, every sum in a register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
#[allow(unsafe_code)]
// One row index addresses several register arrays and the row's codes; it is a constant
// once the loops over `R` are unrolled.
#[allow(clippy::needless_range_loop)]
unsafe fn tile_avx512_vnni<const R: usize>(tile: &Tile<'_>, out: &mut [[f32; PANEL]; TILE_ROWS]) {
    use std::arch::x86_64::*;
    // SAFETY (whole body): as in `tile_avx_vnni`.
    unsafe {
        let data = tile.data.as_ptr();
        let codes = tile.codes.as_ptr();
        let row_code =
            |r: usize, t: usize| _mm512_set1_epi32(codes.add(r * tile.stride + 4 * t).cast::<i32>().read_unaligned());
        let mut totals = [_mm512_setzero_ps(); R];
        for g in 0..tile.groups {
            let (mut t, end) = (g * GROUP_QUADS, ((g + 1) * GROUP_QUADS).min(tile.quads));
            let mut even = [_mm512_setzero_si512(); R];
            let mut odd = [_mm512_setzero_si512(); R];
            while t + 2 <= end {
                let w0 = _mm512_loadu_si512(data.add(t * PANEL * 4).cast());
                let w1 = _mm512_loadu_si512(data.add((t + 1) * PANEL * 4).cast());
                for r in 0..R {
                    even[r] = _mm512_dpbusd_epi32(even[r], row_code(r, t), w0);
                    odd[r] = _mm512_dpbusd_epi32(odd[r], row_code(r, t + 1), w1);
                }
                t += 2;
            }
            if t < end {
                let w = _mm512_loadu_si512(data.add(t * PANEL * 4).cast());
                for r in 0..R {
                    even[r] = _mm512_dpbusd_epi32(even[r], row_code(r, t), w);
                }
            }
            let scales = _mm512_loadu_ps(tile.scales.as_ptr().add(g * PANEL));
            let offsets = _mm512_loadu_si512(tile.offsets.as_ptr().add(g * PANEL).cast());
            for r in 0..R {
                let exact = _mm512_sub_epi32(_mm512_add_epi32(even[r], odd[r]), offsets);
                let scale = _mm512_mul_ps(_mm512_set1_ps(tile.row_scales[r * tile.groups + g]), scales);
                totals[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), scale, totals[r]);
            }
        }
        for (r, total) in totals.iter().enumerate() {
            _mm512_storeu_ps(out[r].as_mut_ptr(), *total);
        }
    }
}

/// AMX-INT8 ([`Int8Path::Amx`]): the tile unit multiplies 16 activation rows by one group of
/// 32 inputs of one panel (16 columns) in one `tdpbssd`, and AVX-512 scales the 16 × 16
/// exact group sums into the f32 totals exactly as [`tile_portable`] does.
///
/// Tiles are shaped once per call of [`amx::panels`] (`ldtilecfg`) and released at its end
/// (`tilerelease`), so a thread that is not multiplying holds no tile state. The shapes are
/// fixed because the operands are padded to them: activation rows to a multiple of 16 and
/// to whole groups ([`QRows`]), weight panels to whole groups
/// ([`QMatrix::panel_quads`]); the padding is zero and adds nothing. Rust has no AMX
/// intrinsics on stable, so the tile instructions are inline assembly (the tile registers
/// are invisible to the compiler, which never uses them).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod amx {
    use std::arch::asm;
    use std::arch::x86_64::*;

    use super::{AMX_ROWS, GROUP, GROUP_QUADS, PANEL, QRows, ROW_BLOCK, Weights};

    /// Whether this CPU has AMX-TILE and AMX-INT8 and the kernel let this process use the
    /// tile state (asked once, on first call).
    pub(super) fn ready() -> bool {
        static READY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *READY.get_or_init(|| cpu_has_amx_int8() && request_tile_state())
    }

    fn cpu_has_amx_int8() -> bool {
        // CPUID leaf 7, sub-leaf 0: EDX bit 24 is AMX-TILE, bit 25 AMX-INT8.
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86_64 CPU; leaf 7 is read only if the CPU has it.
        unsafe {
            __get_cpuid_max(0).0 >= 7 && (__cpuid_count(7, 0).edx >> 24) & 0b11 == 0b11
        }
    }

    /// `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`: Linux gives a process the
    /// 8 KiB tile state only when asked; without it the first tile instruction faults.
    #[cfg(target_os = "linux")]
    fn request_tile_state() -> bool {
        const SYS_ARCH_PRCTL: isize = 158;
        const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
        const XFEATURE_XTILEDATA: usize = 18;
        let result: isize;
        // SAFETY: this system call only changes what the process may use; it reads and
        // writes none of our memory. `syscall` clobbers rcx and r11, declared.
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL => result,
                in("rdi") ARCH_REQ_XCOMP_PERM,
                in("rsi") XFEATURE_XTILEDATA,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        result == 0
    }

    #[cfg(not(target_os = "linux"))]
    fn request_tile_state() -> bool {
        false
    }

    /// The operand of `ldtilecfg`.
    #[repr(C, align(64))]
    struct TileConfig {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        bytes_per_row: [u16; 16],
        rows: [u8; 16],
    }

    /// Group sums as `tilestored` leaves them: 16 rows of 16 columns.
    #[repr(C, align(64))]
    struct Sums([[i32; PANEL]; AMX_ROWS]);

    /// The AMX path of `q8_panels`: panels `from..to` of `w` into `c`, whose rows are
    /// `ldc` long and whose column 0 is `w`'s column `column0`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn panels(
        rows: &QRows,
        m: usize,
        weights: Weights<'_>,
        from: usize,
        to: usize,
        c: &mut [f32],
        ldc: usize,
        column0: usize,
    ) {
        let w = weights.q;
        let groups = w.groups;
        // What every tile load reads: 16 rows of `a_stride` bytes, and eight quads of a
        // panel's whole groups.
        assert!(super::Int8Path::Amx.missing_feature().is_none(), "amx::panels without AMX");
        assert!(rows.stride == groups * GROUP && rows.codes.len() >= m.next_multiple_of(AMX_ROWS) * rows.stride);
        assert!(rows.scales.len() >= m.next_multiple_of(AMX_ROWS) * groups);
        assert!(w.panel_quads == groups * GROUP_QUADS && w.data.len() >= to * w.panel_quads * PANEL * 4);
        assert!(w.scales.len() >= to * groups * PANEL && to <= w.n.div_ceil(PANEL));
        // What the tiles add into: rows 0..m of `c`, columns from `from`'s first to `to`'s
        // last (or `n`), shifted by `column0`.
        let last_column = (to * PANEL).min(w.n);
        assert!(from <= to && column0 <= from * PANEL && last_column - column0 <= ldc);
        assert!(m == 0 || from == to || c.len() >= (m - 1) * ldc + last_column - column0);
        // SAFETY: the CPU has AMX-INT8, AVX-512 F and BW and FMA (checked above); the
        // asserts bound every read of the tiles and every element of `c` a tile adds into.
        unsafe {
            configure();
            panels_avx512(rows, m, weights, from, to, c, ldc, column0);
            asm!("tilerelease", options(nostack));
        }
    }

    /// Loads the tile shapes: tmm0 and tmm1 activations (16 rows × 32 bytes), tmm2 and tmm3
    /// weights (8 quads × 64 bytes), tmm4 to tmm7 sums (16 rows × 16 columns × 4 bytes).
    unsafe fn configure() {
        let mut config =
            TileConfig { palette: 1, start_row: 0, reserved: [0; 14], bytes_per_row: [0; 16], rows: [0; 16] };
        // tmm0, tmm1: activations; tmm2, tmm3: weights; tmm4–tmm7: sums.
        let (a, b, c) =
            ((GROUP as u16, AMX_ROWS as u8), (4 * PANEL as u16, GROUP_QUADS as u8), (4 * PANEL as u16, AMX_ROWS as u8));
        for (tmm, (bytes, rows)) in [a, a, b, b, c, c, c, c].into_iter().enumerate() {
            config.bytes_per_row[tmm] = bytes;
            config.rows[tmm] = rows;
        }
        // SAFETY: the CPU has AMX and the process its tile state (the caller checked);
        // `config` is a valid palette-1 configuration, 64 bytes, aligned.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &config, options(nostack)) };
    }

    #[target_feature(enable = "avx512f,avx512bw,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn panels_avx512(
        rows: &QRows,
        m: usize,
        weights: Weights<'_>,
        from: usize,
        to: usize,
        c: &mut [f32],
        ldc: usize,
        column0: usize,
    ) {
        let w = weights.q;
        let groups = w.groups;
        let a_stride = groups * GROUP;
        let panel_bytes = w.panel_quads * PANEL * 4;
        let panel_weights = |panel: usize| w.data.as_ptr().wrapping_add(panel * panel_bytes);
        let column_scales = |panel: usize| w.scales.as_ptr().wrapping_add(panel * groups * PANEL);
        let mut block = 0;
        while block < m {
            let block_end = (block + ROW_BLOCK).min(m);
            for panel in from..to {
                let j0 = panel * PANEL;
                // The panel's columns inside `n`, as a mask of the 16 lanes.
                let columns = (1u32 << PANEL.min(w.n - j0)) - 1;
                let mut i = block;
                while i < block_end {
                    let count = AMX_ROWS.min(block_end - i);
                    // SAFETY: `panels` asserted that the padded codes and scales hold rows
                    // up to a multiple of 16 past `block_end`, that panels below `to` have
                    // their whole groups, and that `c` holds rows i..i + count at these
                    // columns.
                    unsafe {
                        tile(
                            rows.codes.as_ptr().add(i * a_stride).cast::<i8>(),
                            a_stride,
                            panel_weights(panel),
                            groups,
                            rows.scales.as_ptr().add(i * groups),
                            column_scales(panel),
                            Destination {
                                at: c.as_mut_ptr().add(i * ldc + j0 - column0),
                                ldc,
                                rows: count,
                                columns: columns as u16,
                            },
                        );
                    }
                    i += count;
                }
            }
            super::add_block_outliers(rows, weights, block, block_end, from, to, c, ldc, column0);
            block = block_end;
        }
    }

    /// Where a tile adds its totals: `rows` rows `ldc` apart from `at`, the lanes of
    /// `columns` in each.
    struct Destination {
        at: *mut f32,
        ldc: usize,
        rows: usize,
        columns: u16,
    }

    /// Group `g`'s product into `sums`: weights and activations on tiles `g % 2` (tmm0 or
    /// tmm1, tmm2 or tmm3), the sums on tile `4 + g % 4`, so that four groups can be in the
    /// tile unit at once.
    #[inline(always)]
    unsafe fn product(g: usize, a: *const i8, a_stride: usize, b: *const i8, sums: *mut i32) {
        macro_rules! on {
            ($a:literal, $b:literal, $c:literal) => {
                // SAFETY: the caller bounds the 16 × 32 bytes at `a`, 8 × 64 at `b` and
                // 1 KiB at `sums`.
                unsafe {
                    asm!(
                        concat!("tileloadd tmm", $a, ", [{a} + {a_stride}*1]"),
                        concat!("tileloadd tmm", $b, ", [{b} + {stride}*1]"),
                        concat!("tilezero tmm", $c),
                        concat!("tdpbssd tmm", $c, ", tmm", $a, ", tmm", $b),
                        concat!("tilestored [{sums} + {stride}*1], tmm", $c),
                        a = in(reg) a,
                        a_stride = in(reg) a_stride,
                        b = in(reg) b,
                        stride = in(reg) 4 * PANEL,
                        sums = in(reg) sums,
                        options(nostack),
                    )
                }
            };
        }
        match g % 4 {
            0 => on!("0", "2", "4"),
            1 => on!("1", "3", "5"),
            2 => on!("0", "2", "6"),
            _ => on!("1", "3", "7"),
        }
    }

    /// Groups multiplied ahead of the one being scaled (1 to 8 measured the same; the tile
    /// unit's `tdpbssd` and `tilestored`, 16 cycles each, do not overlap the scaling).
    const AHEAD: usize = 4;

    /// `c[r][j] += Σ_g (sum of group g as f32) · (row scale · column scale)`, the sum made
    /// by fused multiply-adds in group order from zero and then added to `c` (as
    /// [`super::tile_portable`] and `q8_panels` do), for 16 rows at `a` (`a_stride` bytes
    /// apart) and the panel at `b`, into the rows and columns of `out`.
    ///
    /// The products run [`AHEAD`] groups ahead of the scaling, into a ring of buffers.
    #[target_feature(enable = "avx512f,avx512bw,fma")]
    unsafe fn tile(
        a: *const i8,
        a_stride: usize,
        b: *const i8,
        groups: usize,
        row_scales: *const f32,
        column_scales: *const f32,
        out: Destination,
    ) {
        // Not zeroed (a 4 KiB memset per tile showed in profiles): `tilestored` writes a
        // buffer whole before it is read.
        let mut ring = std::mem::MaybeUninit::<[Sums; AHEAD]>::uninit();
        let ring: *mut i32 = ring.as_mut_ptr().cast();
        let buffer = |g: usize| ring.wrapping_add((g % AHEAD) * AMX_ROWS * PANEL);
        let group_bytes = GROUP_QUADS * PANEL * 4;
        // SAFETY (whole body): the caller bounds 16 rows of `groups · 32` bytes at `a`,
        // `groups` groups of weights at `b`, 16 rows of `groups` scales at `row_scales`,
        // `groups · 16` at `column_scales` and the destination; masked lanes are neither
        // read nor written; `buffer` stays in the ring.
        unsafe {
            for g in 0..groups.min(AHEAD) {
                product(g, a.add(g * GROUP), a_stride, b.add(g * group_bytes), buffer(g));
            }
            let mut totals = [_mm512_setzero_ps(); AMX_ROWS];
            for g in 0..groups {
                let sums = buffer(g);
                let column_scale = _mm512_loadu_ps(column_scales.add(g * PANEL));
                for (r, total) in totals.iter_mut().enumerate() {
                    let exact = _mm512_load_si512(sums.add(r * PANEL).cast());
                    let scale = _mm512_mul_ps(_mm512_set1_ps(*row_scales.add(r * groups + g)), column_scale);
                    *total = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), scale, *total);
                }
                let next = g + AHEAD;
                if next < groups {
                    product(next, a.add(next * GROUP), a_stride, b.add(next * group_bytes), buffer(next));
                }
            }
            for (r, total) in totals.into_iter().enumerate().take(out.rows) {
                let at = out.at.add(r * out.ldc);
                let sum = _mm512_add_ps(_mm512_maskz_loadu_ps(out.columns, at), total);
                _mm512_mask_storeu_ps(at, out.columns, sum);
            }
        }
    }
}

/// Normalises `row` to zero mean and unit variance, then scales by `gamma` and shifts by
/// `beta` (PyTorch's LayerNorm: biased variance, `eps` inside the square root).
pub(crate) fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    dispatch!(layer_norm_avx2, layer_norm_impl(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32));
}

#[inline(always)]
fn layer_norm_impl<const FMA: bool>(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    let mut lanes = [0.0f32; 8];
    let chunks = row.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane = madd::<FMA>(x - mean, x - mean, *lane);
        }
    }
    let variance = (lanes.iter().sum::<f32>() + tail.iter().map(|&x| (x - mean) * (x - mean)).sum::<f32>()) / n;
    let inv_std = 1.0 / (variance + eps).sqrt();
    for ((x, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = madd::<FMA>((*x - mean) * inv_std, g, b);
    }
}

/// Sum with eight independent accumulators, so that the compiler can vectorise it.
#[inline(always)]
pub(crate) fn sum(values: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let chunks = values.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    let mut total = lanes.iter().sum::<f32>();
    for &v in tail {
        total += v;
    }
    total
}

/// In-place softmax of one row of attention scores.
pub(crate) fn softmax(row: &mut [f32]) {
    dispatch!(softmax_avx2, softmax_impl(row: &mut [f32]));
}

#[inline(always)]
fn softmax_impl<const FMA: bool>(row: &mut [f32]) {
    let max = row.iter().fold(f32::MIN, |m, &x| if x > m { x } else { m });
    for x in row.iter_mut() {
        *x = exp_impl::<FMA>(*x - max);
    }
    let inv = 1.0 / sum(row);
    for x in row.iter_mut() {
        *x *= inv;
    }
}

/// `e^x` for single precision, within 2 ulp on the range softmax uses (`x <= 0`); inputs
/// below -87 give `e^-87`, not zero, which no softmax row can tell apart.
#[cfg(test)]
pub(crate) fn exp(x: f32) -> f32 {
    exp_impl::<false>(x)
}

/// Plain arithmetic and bit casts only, so loops over it vectorise (libm's `expf` does not).
#[inline(always)]
fn exp_impl<const FMA: bool>(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding it rounds to an integer that lands in the low mantissa bits.
    const ROUNDER: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = madd::<FMA>(x, LOG2E, ROUNDER);
    let n = shifted - ROUNDER;
    let exponent = (shifted.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    let r = madd::<FMA>(-n, LN2_LO, madd::<FMA>(-n, LN2_HI, x));
    // Cephes expf polynomial for e^r on [-ln2/2, ln2/2].
    let mut p = 1.987_569_1e-4f32;
    p = madd::<FMA>(p, r, 1.398_199_9e-3);
    p = madd::<FMA>(p, r, 8.333_452e-3);
    p = madd::<FMA>(p, r, 4.166_579_6e-2);
    p = madd::<FMA>(p, r, 0.166_666_65);
    p = madd::<FMA>(p, r, 0.5);
    let y = madd::<FMA>(p, r * r, r) + 1.0;
    y * f32::from_bits(((exponent + 127) as u32) << 23)
}

/// The error function for single precision, within 5e-7 of the exact value.
#[cfg(test)]
pub(crate) fn erf(x: f32) -> f32 {
    erf_impl::<false>(x)
}

/// A rational approximation on `[-4, 4]` (outside it `erf` is ±1 in f32), the one XLA and
/// Eigen use; no `exp`, no branches, so loops over it vectorise.
#[inline(always)]
fn erf_impl<const FMA: bool>(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10f32;
    p = madd::<FMA>(p, x2, 2.770_681_4e-8);
    p = madd::<FMA>(p, x2, -2.101_024e-6);
    p = madd::<FMA>(p, x2, -5.692_506_4e-5);
    p = madd::<FMA>(p, x2, -7.349_906_3e-4);
    p = madd::<FMA>(p, x2, -2.954_6e-3);
    p = madd::<FMA>(p, x2, -1.609_603_3e-2);
    let mut q = -1.456_607_2e-5f32;
    q = madd::<FMA>(q, x2, -2.133_740_6e-4);
    q = madd::<FMA>(q, x2, -1.682_827e-3);
    q = madd::<FMA>(q, x2, -7.373_329e-3);
    q = madd::<FMA>(q, x2, -1.426_474e-2);
    x * p / q
}

/// Exact (erf-based) GELU, as BERT's `hidden_act: "gelu"`, applied in place.
pub(crate) fn gelu(values: &mut [f32]) {
    dispatch!(gelu_avx2, gelu_impl(values: &mut [f32]));
}

#[inline(always)]
fn gelu_impl<const FMA: bool>(values: &mut [f32]) {
    const FRAC_1_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;
    for x in values.iter_mut() {
        let v = *x;
        let half = 0.5 * v;
        *x = madd::<FMA>(half, erf_impl::<FMA>(v * FRAC_1_SQRT_2), half);
    }
}

/// Scales `vector` to unit Euclidean length; a zero vector stays zero (like PyTorch's
/// `normalize`, which divides by `max(norm, 1e-12)`).
pub(crate) fn l2_normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    let inv = 1.0 / norm.max(1e-12);
    vector.iter_mut().for_each(|x| *x *= inv);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f32], av: View, b: &[f32], bv: View) -> Vec<f32> {
        let mut out = vec![0.0; av.rows * bv.cols];
        for i in 0..av.rows {
            for j in 0..bv.cols {
                let mut acc = 0.0f64;
                for p in 0..av.cols {
                    let x = a[av.offset + i * av.row_stride + p * av.col_stride];
                    let y = b[bv.offset + p * bv.row_stride + j * bv.col_stride];
                    acc += f64::from(x) * f64::from(y);
                }
                out[i * bv.cols + j] = acc as f32;
            }
        }
        out
    }

    #[test]
    fn matmul_matches_naive_for_strided_and_transposed_views() {
        let a: Vec<f32> = (0..200).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let b: Vec<f32> = (0..300).map(|i| ((i * 5) % 13) as f32 * 0.25).collect();
        // a: 5×6 block with row stride 9 at offset 3; b: transposed 4×6 → 6×4.
        let av = View::block(3, 5, 6, 9);
        let bv = View::block(10, 4, 6, 20).t();
        let expected = naive(&a, av, &b, bv);
        let mut c = vec![1.0; 5 * 4];
        matmul(&a, av, &b, bv, &mut c, View::dense(0, 5, 4), false);
        assert_eq!(c, expected);
        matmul(&a, av, &b, bv, &mut c, View::dense(0, 5, 4), true);
        let doubled: Vec<f32> = expected.iter().map(|x| 2.0 * x).collect();
        assert_eq!(c, doubled);
    }

    #[test]
    fn few_rows_take_the_streaming_path_and_agree_with_naive() {
        // b dense with unit column stride, k not a multiple of 4: the small-m path for
        // m ≤ SMALL_M, matrixmultiply above it; both must equal the naive product.
        let a: Vec<f32> = (0..40 * 9).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let b: Vec<f32> = (0..9 * 37).map(|i| ((i * 5) % 13) as f32 * 0.25).collect();
        for m in [1, 3, SMALL_M, SMALL_M + 1, 40] {
            let av = View::block(0, m, 7, 9);
            let bv = View::block(2, 7, 33, 37);
            let expected = naive(&a, av, &b, bv);
            let mut c = vec![1.0; m * 33];
            matmul(&a, av, &b, bv, &mut c, View::dense(0, m, 33), false);
            assert_eq!(c, expected, "m = {m}");
            matmul(&a, av, &b, bv, &mut c, View::dense(0, m, 33), true);
            let doubled: Vec<f32> = expected.iter().map(|x| 2.0 * x).collect();
            assert_eq!(c, doubled, "m = {m}, accumulating");
        }
    }

    /// A pseudo-random generator for test inputs (xorshift64*), uniform in [-1, 1).
    struct Noise(u64);

    impl Noise {
        fn next(&mut self) -> f32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }

        /// `len` values, every `outlier`-th one eight times larger (BERT's outlier
        /// dimensions); `outlier` 0 for none.
        fn values(&mut self, len: usize, outlier: usize) -> Vec<f32> {
            (0..len).map(|i| if outlier > 0 && i % outlier == 3 { 8.0 * self.next() } else { self.next() }).collect()
        }
    }

    /// Shapes with every kind of tail: k not a multiple of 4, 32 or 64, n not a multiple
    /// of 8 or 16, a single row, a block of rows longer than `ROW_BLOCK`.
    const SHAPES: [(usize, usize, usize); 14] = [
        (1, 1, 1),
        (1, 3, 5),
        (2, 4, 7),
        (3, 5, 16),
        (4, 31, 17),
        (5, 32, 33),
        (1, 33, 48),
        (9, 63, 15),
        (7, 64, 64),
        (4, 65, 40),
        (11, 100, 129),
        (70, 37, 24),
        (10, 384, 1152),
        (3, 1536, 384),
    ];

    #[test]
    fn int8_weights_are_within_half_a_step_of_the_f32_ones() {
        let mut noise = Noise(7);
        for (_, k, n) in SHAPES {
            let w = noise.values(k * n, 13);
            let q = QMatrix::quantize(&w, k, n).expect("quantises");
            for p in 0..k {
                for j in 0..n {
                    // The step is the group's largest magnitude over 127.
                    let largest = (p / GROUP * GROUP..((p / GROUP + 1) * GROUP).min(k))
                        .map(|r| w[r * n + j].abs())
                        .fold(0f32, f32::max);
                    let error = (w[p * n + j] - q.dequantized(p, j)).abs();
                    assert!(error <= largest / 127.0 * 0.5 + 1e-6, "({k}, {n}) weight ({p}, {j}): {error}");
                }
            }
        }
        assert!(QMatrix::quantize(&[f32::NAN; 16], 2, 8).is_none(), "non-finite weights");
        assert!(QMatrix::quantize(&[], 0, 8).is_none(), "empty");
    }

    /// The product against the f64 product of the dequantised weights and the f32
    /// activations: the only other error is the activations' rounding, at most half a step
    /// (the group's largest magnitude over 127) per activation, bounded here term by term.
    #[test]
    fn int8_product_is_within_the_activation_rounding_of_the_exact_one() {
        let mut noise = Noise(11);
        for (m, k, n) in SHAPES {
            let w = noise.values(k * n, 13);
            let q = QMatrix::quantize(&w, k, n).expect("quantises");
            let a = noise.values(m * k, 29);
            let mut c = vec![0.25f32; m * n];
            matmul_q8(&a, m, &q, &w, &mut c, 1);
            for i in 0..m {
                let row = &a[i * k..(i + 1) * k];
                for j in 0..n {
                    let (mut exact, mut bound) = (0f64, 0f64);
                    for p in 0..k {
                        // The outliers are multiplied by the f32 weights, the rest by the
                        // int8 ones: both differences are in the bound.
                        let weight = f64::from(q.dequantized(p, j));
                        exact += f64::from(row[p]) * weight;
                        let group = &row[p / GROUP * GROUP..((p / GROUP + 1) * GROUP).min(k)];
                        let step = f64::from(group.iter().fold(0f32, |m, x| m.max(x.abs()))) / 127.0;
                        bound += 0.5 * step * weight.abs();
                        bound += f64::from(row[p].abs()) * (f64::from(w[p * n + j]) - weight).abs();
                    }
                    let got = f64::from(c[i * n + j]) - 0.25;
                    assert!(
                        (got - exact).abs() <= bound * 1.001 + 1e-5 * (1.0 + exact.abs()),
                        "({m}, {k}, {n}) element ({i}, {j}): {got} vs {exact}, bound {bound}"
                    );
                }
            }
        }
    }

    /// Every int8 path this CPU has gives bit-identical results to the portable one, on
    /// every shape and with the columns split over two threads; a path the CPU lacks is
    /// skipped, saying so.
    #[test]
    fn every_int8_path_equals_the_portable_one() {
        let mut noise = Noise(3);
        let cases: Vec<_> = SHAPES
            .iter()
            .map(|&(m, k, n)| {
                let w = noise.values(k * n, 13);
                let q = QMatrix::quantize(&w, k, n).expect("quantises");
                // Activations with outliers, with a zero row and a zero group (scale 0).
                let mut a = noise.values(m * k, 29);
                a[..k.min(40)].fill(0.0);
                let start = noise.values(m * n, 0);
                (m, k, n, w, q, a, start)
            })
            .collect();
        for path in Int8Path::ALL {
            if let Some(feature) = path.missing_feature() {
                eprintln!("int8 path {}: skipped, this CPU lacks {feature}", path.name());
                continue;
            }
            for (m, k, n, w, q, a, start) in &cases {
                let mut portable = start.clone();
                matmul_q8_on(Int8Path::Portable, a, *m, q, w, &mut portable, 1);
                for threads in [1, 2] {
                    let mut got = start.clone();
                    matmul_q8_on(path, a, *m, q, w, &mut got, threads);
                    assert_eq!(got, portable, "{} path, ({m}, {k}, {n}), {threads} threads", path.name());
                }
            }
            eprintln!("int8 path {}: equal to the portable path on {} shapes", path.name(), cases.len());
        }
    }

    /// The AVX-512 build of every dispatched kernel gives the AVX2 build's bits, on lengths
    /// with every kind of tail; skipped, saying so, where the CPU lacks AVX-512.
    #[test]
    fn avx512_builds_of_the_element_wise_kernels_equal_the_avx2_ones() {
        #[cfg(target_arch = "x86_64")]
        {
            if !has_avx512() {
                eprintln!("avx512 element-wise kernels: skipped, this CPU lacks AVX-512");
                return;
            }
            let mut noise = Noise(17);
            for len in [1, 7, 15, 16, 17, 31, 33, 100, 384, 1536, 1537] {
                let row = noise.values(len, 13);
                let (gamma, beta) = (noise.values(len, 0), noise.values(len, 0));
                let a = noise.values(3 * len, 29);
                let w = noise.values(len * len.min(40), 0);
                let b = noise.values(len.min(40) * len, 0);
                let outliers: Vec<(u32, f32)> =
                    (0..3 * OUTLIERS).map(|i| ((i * 7 % len.min(40)) as u32, noise.next() * 8.0)).collect();
                let run = |off: bool| {
                    AVX512_OFF.with(|cell| cell.set(off));
                    let mut soft: Vec<f32> = row.iter().map(|x| 10.0 * x).collect();
                    softmax(&mut soft);
                    let mut gelu_out: Vec<f32> = row.iter().map(|x| 4.0 * x).collect();
                    gelu(&mut gelu_out);
                    let mut norm = row.clone();
                    layer_norm(&mut norm, &gamma, &beta, 1e-12);
                    let quantised = QRows::quantize(&a, 3, len, Int8Path::Portable);
                    let mut plus = noise_free_start(3 * len);
                    let qb = QMatrix::quantize(&b, len.min(40), len).expect("quantises");
                    let weights = Weights { q: &qb, f32: &b };
                    add_outliers(&mut plus, len, 0, len, &outliers, weights);
                    // A band of columns, as one thread's half of the panels adds it.
                    add_outliers(&mut plus[len / 3..], len, len / 3, len - len / 3, &outliers, weights);
                    let k = len.min(40);
                    let mut product = noise_free_start(5 * len);
                    matmul(
                        &w,
                        View::dense(0, 5.min(len), k),
                        &b,
                        View::dense(0, k, len),
                        &mut product,
                        View::dense(0, 5.min(len), len),
                        true,
                    );
                    AVX512_OFF.with(|cell| cell.set(false));
                    (soft, gelu_out, norm, quantised.codes, quantised.scales, quantised.outliers, plus, product)
                };
                assert!(run(false) == run(true), "length {len}");
            }
            eprintln!("avx512 element-wise kernels: equal to the avx2 ones");
        }
    }

    /// A start for accumulating outputs that is not all zeros.
    fn noise_free_start(len: usize) -> Vec<f32> {
        (0..len).map(|i| (i % 7) as f32 * 0.125).collect()
    }

    #[test]
    fn int8_rows_are_the_same_alone_in_a_batch_and_split_over_threads() {
        let (k, n) = (96, 1152);
        let mut noise = Noise(5);
        let w = noise.values(k * n, 13);
        let q = QMatrix::quantize(&w, k, n).expect("quantises");
        let m = 11;
        let a = noise.values(m * k, 29);
        let start: Vec<f32> = (0..m * n).map(|i| (i % 5) as f32 * 0.1).collect();
        let mut batch = start.clone();
        matmul_q8(&a, m, &q, &w, &mut batch, 1);
        let mut split = start.clone();
        matmul_q8(&a, m, &q, &w, &mut split, 2);
        assert_eq!(batch, split, "two threads");
        // Eleven rows are a lone short text's: the split runs on every path (see
        // `matmul_q8_on`); the portable one is checked as well.
        let mut portable = start.clone();
        matmul_q8_on(Int8Path::Portable, &a, m, &q, &w, &mut portable, 1);
        let mut portable_split = start.clone();
        matmul_q8_on(Int8Path::Portable, &a, m, &q, &w, &mut portable_split, 2);
        assert_eq!(portable, portable_split, "two threads, portable");
        for i in 0..m {
            let mut alone = start[i * n..(i + 1) * n].to_vec();
            matmul_q8(&a[i * k..(i + 1) * k], 1, &q, &w, &mut alone, 1);
            assert_eq!(alone, batch[i * n..(i + 1) * n], "row {i} alone");
        }
    }

    #[test]
    fn activation_rows_round_to_the_nearest_step_without_their_outliers() {
        // The four largest magnitudes are kept apart (code 0, byte 128); of the rest, 1.5
        // steps rounds to 2 (ties to even), -127 steps stays -127; the padding is 128.
        let mut row = vec![0.015f32, -1.27, 1.27, 0.0, 0.0049, 9.0, -8.0, 7.0, 6.5];
        row.resize(33, 0.0);
        row[32] = 0.5;
        let quantised = QRows::quantize(&row, 1, 33, Int8Path::Portable);
        assert_eq!(quantised.stride, 36);
        assert_eq!(&quantised.codes[..9], &[130, 1, 255, 128, 128, 128, 128, 128, 128]);
        assert_eq!(&quantised.codes[32..], &[255, 128, 128, 128]);
        assert_eq!(quantised.scales, vec![1.27 / 127.0, 0.5 / 127.0]);
        assert_eq!(quantised.outliers, vec![(5, 9.0), (6, -8.0), (7, 7.0), (8, 6.5)]);
        let zeros = QRows::quantize(&[0.0; 5], 1, 5, Int8Path::Portable);
        assert_eq!(zeros.codes, vec![128; 8]);
        assert_eq!(zeros.outliers, vec![(0, 0.0); OUTLIERS]);
    }

    #[test]
    fn column_split_over_two_threads_equals_one_thread() {
        let a: Vec<f32> = (0..12 * 40).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let b: Vec<f32> = (0..40 * 301).map(|i| ((i * 5) % 13) as f32 * 0.25).collect();
        for (m, accumulate) in [(1, false), (12, true), (SMALL_M + 2, false)] {
            let av = View::block(0, m.min(12), 39, 40);
            let bv = View::block(1, 39, 300, 301);
            let cv = View::block(3, m.min(12), 300, 307);
            let mut one = vec![0.5f32; 3 + 12 * 307];
            let mut two = one.clone();
            matmul(&a, av, &b, bv, &mut one, cv, accumulate);
            matmul_columns(&a, av, &b, bv, &mut two, cv, accumulate, 2);
            assert_eq!(one, two, "m = {m}");
        }
    }

    #[test]
    fn views_out_of_bounds_are_detected() {
        assert!(View::dense(0, 3, 4).fits(12));
        assert!(!View::dense(1, 3, 4).fits(12));
        assert!(View::dense(5, 0, 4).fits(5));
        assert!(!View::block(0, 2, 2, usize::MAX).fits(10));
    }

    #[test]
    fn exp_is_accurate_where_softmax_uses_it() {
        let mut worst = 0.0f64;
        for i in 0..=20_000 {
            let x = -87.0 + 87.0 * f64::from(i) / 20_000.0;
            let approx = f64::from(exp(x as f32));
            let fused = f64::from(exp_impl::<true>(x as f32));
            worst = worst.max((fused - (x as f32 as f64).exp()).abs() / (x as f32 as f64).exp());
            let exact = (x as f32 as f64).exp();
            worst = worst.max((approx - exact).abs() / exact);
        }
        assert!(worst < 3e-7, "relative error {worst}");
    }

    #[test]
    fn erf_is_accurate() {
        // Reference in f64: the Taylor series below 3, the asymptotic series of erfc above.
        fn erf64(x: f64) -> f64 {
            let a = x.abs();
            let value = if a < 3.0 {
                let (mut sum, mut term, mut n) = (0.0f64, a, 0.0f64);
                while n < 60.0 {
                    sum += term / (2.0 * n + 1.0);
                    n += 1.0;
                    term *= -a * a / n;
                }
                sum * 2.0 / std::f64::consts::PI.sqrt()
            } else {
                let (mut series, mut term) = (1.0f64, 1.0f64);
                for n in 1..8 {
                    term *= -f64::from(2 * n - 1) / (2.0 * a * a);
                    series += term;
                }
                1.0 - (-a * a).exp() / (a * std::f64::consts::PI.sqrt()) * series
            };
            value.copysign(x)
        }
        let mut worst = 0.0f64;
        for i in 0..=12_000 {
            let x = -6.0 + f64::from(i) / 1000.0;
            let exact = erf64(x as f32 as f64);
            worst = worst.max((f64::from(erf(x as f32)) - exact).abs());
            worst = worst.max((f64::from(erf_impl::<true>(x as f32)) - exact).abs());
        }
        assert!(worst < 5e-7, "absolute error {worst}");
    }

    #[test]
    fn softmax_sums_to_one_and_survives_extremes() {
        let mut row = vec![1000.0, -1000.0, 0.0, f32::MIN, 3.0];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(row.iter().all(|x| x.is_finite() && *x >= 0.0));
    }

    #[test]
    fn layer_norm_and_normalize() {
        let mut row = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut row, &[1.0; 4], &[0.0; 4], 1e-12);
        assert!(sum(&row).abs() < 1e-6);
        let mut zero = vec![0.0f32; 4];
        l2_normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 4]);
    }
}

#[cfg(test)]
mod split_timing {
    use super::*;

    /// Not a test: `cargo test --release -p membank-embed --lib split_timing -- --ignored
    /// --nocapture` prints, for each int8 path this CPU has, a lone query's linear layers
    /// (MiniLM's shapes, 12 tokens) on one thread and split over two (forced, whatever
    /// `matmul_q8_on` would choose).
    #[test]
    #[ignore]
    fn split_timing() {
        let m = 12;
        let shapes = [(384usize, 1152usize), (384, 384), (384, 1536), (1536, 384)];
        let mut x = 11u64;
        let mut next = move || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let layers: Vec<(Vec<f32>, QMatrix, Vec<f32>)> = shapes
            .iter()
            .map(|&(k, n)| {
                let w: Vec<f32> = (0..k * n).map(|_| next() * 0.1).collect();
                let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
                (a, QMatrix::quantize(&w, k, n).expect("finite"), w)
            })
            .collect();
        for path in Int8Path::ALL {
            if path.missing_feature().is_some() {
                continue;
            }
            for threads in [1, 2, 1, 2] {
                let mut times = Vec::new();
                for _ in 0..41 {
                    let start = std::time::Instant::now();
                    // A layer's four products, six times: one query's linear layers.
                    for _ in 0..6 {
                        for (a, q, w) in &layers {
                            let mut c = vec![0f32; m * q.n];
                            // What `matmul_q8_on` does, with the split forced on every path.
                            let rows = QRows::quantize(a, m, q.k, path);
                            let (panels, weights) = (q.n.div_ceil(PANEL), Weights { q, f32: w });
                            if threads == 2 {
                                q8_panels_split(path, &rows, m, weights, panels, &mut c);
                            } else {
                                q8_panels(path, &rows, m, weights, 0, panels, &mut c, q.n, 0);
                            }
                        }
                    }
                    times.push(start.elapsed().as_secs_f64() * 1e3);
                }
                times.sort_by(f64::total_cmp);
                eprintln!("{:>12} threads {threads}: {:.3} ms (median of 41)", path.name(), times[20]);
            }
        }
    }
}
