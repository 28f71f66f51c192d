//! Numeric kernels of the BERT forward pass: a safe, bounds-checked wrapper around
//! `matrixmultiply`'s single-precision matrix product (AVX2/FMA kernels chosen at run time),
//! and the element-wise functions (layer norm, softmax, GELU, L2 normalisation), each
//! compiled twice — for the baseline target and for AVX2+FMA — and picked at run time.
//!
//! This is the one module that is allowed `unsafe`: `sgemm` takes raw pointers, and the
//! AVX2 variants may only be called on a CPU that has AVX2. The wrapper checks every index
//! the product can touch against the slices' lengths before the call, so no caller can make
//! it read or write out of bounds. It deliberately does not parallelise: the caller splits
//! work across threads and each thread runs single-threaded products, which behaves better
//! than a spinning pool on a small, shared machine.
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

/// Runs `$body` compiled for AVX2+FMA when the CPU has them (8 lanes and fused
/// multiply-add), else compiled for the baseline target. `$fma` is the const generic the
/// body uses to choose `mul_add` (one instruction with FMA, a slow libm call without).
macro_rules! dispatch {
    ($name:ident, $generic:ident($($arg:ident: $ty:ty),*)) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn $name($($arg: $ty),*) {
            $generic::<true>($($arg),*)
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
/// [`GROUP`] input rows, for the query path.
///
/// `w[p][j] ≈ q[p][j] · s[p / GROUP][j]`, with `s[g][j]` the largest `|w[p][j]|` of the
/// group over 127 (symmetric, round to nearest). One scale per whole column (per-channel)
/// was measured first: cosine to the f32 vectors 0.9965 on the shortest reference
/// sentences, under the 0.999 we require; groups of 32 rows keep outliers from setting
/// the step of a whole column. The columns are packed in panels of at most [`PANEL`]
/// columns: panel `q` holds rows `0..k` of its columns, each row's bytes contiguous, so
/// one panel is one sequential read; its scales follow the same order, a row of `width`
/// per group. About 28% of the f32 matrix's bytes.
#[derive(Debug, Clone)]
pub(crate) struct QMatrix {
    k: usize,
    n: usize,
    data: Vec<i8>,
    scales: Vec<f32>,
}

/// Columns per panel of a [`QMatrix`]: three 8-lane vectors, so a tile of 4 rows keeps
/// 12 accumulators, 3 weight vectors and a broadcast in the 16 AVX2 registers.
const PANEL: usize = 24;
/// Rows of a tile of [`matmul_q8`].
const TILE_ROWS: usize = 4;
/// Input rows that share one scale per column.
const GROUP: usize = 32;

impl QMatrix {
    /// Quantises a row-major `k × n` matrix; `None` when `n` is not a multiple of 8 (the
    /// kernel's vector width; every BERT shape is) or the matrix holds a non-finite value.
    pub(crate) fn quantize(w: &[f32], k: usize, n: usize) -> Option<Self> {
        if n == 0 || k == 0 || !n.is_multiple_of(8) || w.len() != k * n || !w.iter().all(|x| x.is_finite()) {
            return None;
        }
        let groups = k.div_ceil(GROUP);
        let mut data = Vec::with_capacity(k * n);
        let mut scales = Vec::with_capacity(groups * n);
        let mut j0 = 0;
        while j0 < n {
            let width = PANEL.min(n - j0);
            for g in 0..groups {
                let rows = g * GROUP..((g + 1) * GROUP).min(k);
                for j in j0..j0 + width {
                    let largest = rows.clone().map(|p| w[p * n + j].abs()).fold(0f32, f32::max);
                    scales.push(if largest > 0.0 { largest / 127.0 } else { 1.0 });
                }
            }
            for p in 0..k {
                let group = &scales[j0 * groups + (p / GROUP) * width..][..width];
                for (j, &scale) in (j0..j0 + width).zip(group) {
                    data.push((w[p * n + j] / scale).round().clamp(-127.0, 127.0) as i8);
                }
            }
            j0 += width;
        }
        Some(Self { k, n, data, scales })
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.data.len() + 4 * self.scales.len()
    }
}

/// `c += a · w` for `m` dense rows of `a` (`m × k`) and `c` (`m × n`), with `w` in int8.
///
/// Every output element is computed the same way whatever `m` is and however the
/// columns are split over threads: one lane accumulates `a[i][p] · q[p][j]` for `p` in
/// order, then `c[i][j] += acc · scale[j]` — so a query embedded alone and inside a batch of
/// other queries gets bit-identical numbers. With `threads ≥ 2` the panels are split in two
/// halves, the right half computed into a buffer of its own and copied in (as
/// [`matmul_columns`] does).
///
/// Panics (a bug in this crate) when the slices are shorter than the shapes say.
pub(crate) fn matmul_q8(a: &[f32], m: usize, w: &QMatrix, c: &mut [f32], threads: usize) {
    let (k, n) = (w.k, w.n);
    assert!(a.len() >= m * k && c.len() >= m * n, "matmul_q8: slices shorter than the shapes");
    if m == 0 {
        return;
    }
    let panels = n.div_ceil(PANEL);
    if threads < 2 || panels < 4 {
        q8_panels(a, m, w, 0, panels, c, n, 0);
        return;
    }
    let split = panels / 2;
    let first_right = split * PANEL;
    let width = n - first_right;
    let mut right = vec![0f32; m * width];
    for i in 0..m {
        right[i * width..(i + 1) * width].copy_from_slice(&c[i * n + first_right..(i + 1) * n]);
    }
    std::thread::scope(|scope| {
        let right = &mut right;
        scope.spawn(move || q8_panels(a, m, w, split, panels, right, width, first_right));
        q8_panels(a, m, w, 0, split, c, n, 0);
    });
    for i in 0..m {
        c[i * n + first_right..(i + 1) * n].copy_from_slice(&right[i * width..(i + 1) * width]);
    }
}

/// Panels `from..to` of `w` into `c`, whose rows are `ldc` long and whose column 0 is
/// `w`'s column `column0`.
#[allow(clippy::too_many_arguments)]
fn q8_panels(a: &[f32], m: usize, w: &QMatrix, from: usize, to: usize, c: &mut [f32], ldc: usize, column0: usize) {
    let k = w.k;
    for q in from..to {
        let j0 = q * PANEL;
        let width = PANEL.min(w.n - j0);
        let panel = &w.data[j0 * k..(j0 + width) * k];
        let groups = k.div_ceil(GROUP);
        let scales = &w.scales[j0 * groups..(j0 + width) * groups];
        let mut i = 0;
        while i < m {
            let rows = TILE_ROWS.min(m - i);
            let a_rows = &a[i * k..(i + rows) * k];
            let c_at = i * ldc + (j0 - column0);
            let c_rows = &mut c[c_at..c_at + (rows - 1) * ldc + width];
            q8_tile(a_rows, k, panel, width, scales, c_rows, ldc, rows);
            i += rows;
        }
    }
}

/// One tile: `rows` (1–4) rows of `a` times one panel of `width` (8, 16 or 24) columns.
#[allow(clippy::too_many_arguments)]
fn q8_tile(a: &[f32], k: usize, panel: &[i8], width: usize, scales: &[f32], c: &mut [f32], ldc: usize, rows: usize) {
    debug_assert!(a.len() == rows * k && panel.len() == k * width && scales.len() == k.div_ceil(GROUP) * width);
    debug_assert!(c.len() == (rows - 1) * ldc + width);
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        macro_rules! go {
            ($r:literal, $v:literal) => {{
                #[allow(unsafe_code)]
                // SAFETY: AVX2 and FMA are present (checked above); the slices' lengths are
                // exactly what the tile reads and writes (`a`: rows·k, `panel`: k·width with
                // width = 8·$v, `scales`: ⌈k / GROUP⌉·width, `c`: (rows−1)·ldc + width), asserted by the
                // callers' slicing, and `q8_tile_avx2` touches nothing outside them.
                unsafe {
                    q8_tile_avx2::<$r, $v>(a, k, panel, scales, c, ldc)
                }
            }};
        }
        match (rows, width / 8) {
            (4, 3) => go!(4, 3),
            (3, 3) => go!(3, 3),
            (2, 3) => go!(2, 3),
            (1, 3) => go!(1, 3),
            (4, 2) => go!(4, 2),
            (3, 2) => go!(3, 2),
            (2, 2) => go!(2, 2),
            (1, 2) => go!(1, 2),
            (4, 1) => go!(4, 1),
            (3, 1) => go!(3, 1),
            (2, 1) => go!(2, 1),
            _ => go!(1, 1),
        }
        return;
    }
    q8_tile_portable(a, k, panel, width, scales, c, ldc, rows);
}

/// [`q8_tile`] without AVX2: the same order per element (no fused multiply-add here).
#[allow(clippy::too_many_arguments)]
fn q8_tile_portable(
    a: &[f32],
    k: usize,
    panel: &[i8],
    width: usize,
    scales: &[f32],
    c: &mut [f32],
    ldc: usize,
    rows: usize,
) {
    for r in 0..rows {
        let x = &a[r * k..(r + 1) * k];
        for j in 0..width {
            for (g, group) in x.chunks(GROUP).enumerate() {
                let mut acc = 0f32;
                for (i, &xp) in group.iter().enumerate() {
                    acc += xp * f32::from(panel[(g * GROUP + i) * width + j]);
                }
                c[r * ldc + j] += acc * scales[g * width + j];
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(unsafe_code)]
unsafe fn q8_tile_avx2<const R: usize, const V: usize>(
    a: &[f32],
    k: usize,
    panel: &[i8],
    scales: &[f32],
    c: &mut [f32],
    ldc: usize,
) {
    use std::arch::x86_64::*;
    let width = 8 * V;
    let a = a.as_ptr();
    let panel = panel.as_ptr();
    // SAFETY (whole body): every pointer below stays inside the slices, by the lengths
    // stated in `q8_tile`: rows r < R of `a` are r·k..r·k+k, row p of the panel is
    // p·width..p·width+width, and row r of `c` starts at r·ldc with `width` elements.
    unsafe {
        // One group of rows at a time: its sums are scaled once into `c` at the group's end
        // (12 multiply-adds per 32 rows instead of a multiplication per weight vector).
        let mut start = 0;
        while start < k {
            let end = (start + GROUP).min(k);
            let mut acc = [[_mm256_setzero_ps(); V]; R];
            for p in start..end {
                let row = panel.add(p * width);
                let mut wv = [_mm256_setzero_ps(); V];
                for (v, slot) in wv.iter_mut().enumerate() {
                    let bytes = _mm_loadl_epi64(row.add(8 * v).cast::<__m128i>());
                    *slot = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
                }
                for (r, acc_r) in acc.iter_mut().enumerate() {
                    let x = _mm256_set1_ps(*a.add(r * k + p));
                    for (slot, &wv) in acc_r.iter_mut().zip(&wv) {
                        *slot = _mm256_fmadd_ps(x, wv, *slot);
                    }
                }
            }
            let scale = scales.as_ptr().add((start / GROUP) * width);
            for (r, acc_r) in acc.iter().enumerate() {
                for (v, &sum) in acc_r.iter().enumerate() {
                    let out = c.as_mut_ptr().add(r * ldc + 8 * v);
                    _mm256_storeu_ps(
                        out,
                        _mm256_fmadd_ps(sum, _mm256_loadu_ps(scale.add(8 * v)), _mm256_loadu_ps(out)),
                    );
                }
            }
            start = end;
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

    /// A pseudo-random matrix with a few large columns (as BERT's outlier dimensions).
    fn weights(k: usize, n: usize) -> Vec<f32> {
        (0..k * n)
            .map(|i| {
                let x = ((i as u64).wrapping_mul(2_654_435_761) % 1000) as f32 / 500.0 - 1.0;
                if i % n == 7 { 8.0 * x } else { x }
            })
            .collect()
    }

    #[test]
    fn int8_product_matches_the_dequantised_weights() {
        for (k, n) in [(5, 8), (37, 48), (64, 40), (384, 1152)] {
            let w = weights(k, n);
            let q = QMatrix::quantize(&w, k, n).expect("n is a multiple of 8");
            // The dequantised matrix, read back through the panel layout.
            let mut dq = vec![0f32; k * n];
            let mut j0 = 0;
            while j0 < n {
                let width = PANEL.min(n - j0);
                for p in 0..k {
                    for j in 0..width {
                        dq[p * n + j0 + j] = f32::from(q.data[j0 * k + p * width + j])
                            * q.scales[j0 * k.div_ceil(GROUP) + (p / GROUP) * width + j];
                    }
                }
                j0 += width;
            }
            // Quantisation error per weight is at most half a step of its group's scale,
            // and that step is the group's largest magnitude over 127.
            for (i, (&x, &y)) in w.iter().zip(&dq).enumerate() {
                let (p, j) = (i / n, i % n);
                let largest = (p / GROUP * GROUP..((p / GROUP + 1) * GROUP).min(k))
                    .map(|r| w[r * n + j].abs())
                    .fold(0f32, f32::max);
                assert!((x - y).abs() <= largest / 127.0 * 0.5 + 1e-6, "({k}, {n}) weight {i}");
            }
            for m in [1, 3, 4, 9] {
                let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 11) as f32 / 11.0 - 0.4).collect();
                let expected = naive(&a, View::dense(0, m, k), &dq, View::dense(0, k, n));
                let mut c = vec![0.25f32; m * n];
                matmul_q8(&a, m, &q, &mut c, 1);
                for (i, (&got, &want)) in c.iter().zip(&expected).enumerate() {
                    let tolerance = 1e-4 * (1.0 + want.abs()) * k as f32;
                    assert!((got - 0.25 - want).abs() <= tolerance, "({k}, {n}, m = {m}) element {i}: {got} vs {want}");
                }
            }
        }
        assert!(QMatrix::quantize(&[1.0; 12], 2, 6).is_none(), "n not a multiple of 8");
        assert!(QMatrix::quantize(&[f32::NAN; 16], 2, 8).is_none(), "non-finite weights");
    }

    #[test]
    fn the_portable_int8_tile_agrees_with_the_vector_one() {
        let (k, n) = (100, 48);
        let q = QMatrix::quantize(&weights(k, n), k, n).expect("quantises");
        let a: Vec<f32> = (0..4 * k).map(|i| ((i * 13) % 17) as f32 / 17.0 - 0.5).collect();
        let groups = k.div_ceil(GROUP);
        for (panel_index, width) in [(0, 24), (1, 24)] {
            let j0 = panel_index * PANEL;
            let panel = &q.data[j0 * k..(j0 + width) * k];
            let scales = &q.scales[j0 * groups..(j0 + width) * groups];
            for rows in 1..=4 {
                let mut fast = vec![0.5f32; (rows - 1) * n + width];
                let mut portable = fast.clone();
                q8_tile(&a[..rows * k], k, panel, width, scales, &mut fast, n, rows);
                q8_tile_portable(&a[..rows * k], k, panel, width, scales, &mut portable, n, rows);
                for (x, y) in fast.iter().zip(&portable) {
                    assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "rows {rows}: {x} vs {y}");
                }
            }
        }
    }

    #[test]
    fn int8_rows_are_the_same_alone_in_a_batch_and_split_over_threads() {
        let (k, n) = (96, 1152);
        let q = QMatrix::quantize(&weights(k, n), k, n).expect("quantises");
        let m = 11;
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 13) % 17) as f32 / 17.0 - 0.5).collect();
        let start: Vec<f32> = (0..m * n).map(|i| (i % 5) as f32 * 0.1).collect();
        let mut batch = start.clone();
        matmul_q8(&a, m, &q, &mut batch, 1);
        let mut split = start.clone();
        matmul_q8(&a, m, &q, &mut split, 2);
        assert_eq!(batch, split, "two threads");
        for i in 0..m {
            let mut alone = start[i * n..(i + 1) * n].to_vec();
            matmul_q8(&a[i * k..(i + 1) * k], 1, &q, &mut alone, 1);
            assert_eq!(alone, batch[i * n..(i + 1) * n], "row {i} alone");
        }
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
