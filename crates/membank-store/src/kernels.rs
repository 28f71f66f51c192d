//! The dense scan's numeric kernels: an `f32` dot product, the int8 screening pass (each
//! row's `i8` codes against the query quantised to `i16`, summed exactly in `i32`), and the
//! 4-bit pre-screen of large users (two codes a byte, the same exact integer sum). Each is compiled twice, for the baseline
//! target and for AVX2+FMA, and picked at run time, so one binary runs everywhere and uses
//! 8-lane fused multiply-adds where it can.
//!
//! This is the one module of the store allowed `unsafe`: calling a function compiled for
//! AVX2 is only sound on a CPU that has AVX2, which is checked first. The bodies are safe,
//! bounds-checked Rust that the compiler vectorises.

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

#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// `a * b + c`, fused when compiled with FMA.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// The dot product of two equally long vectors.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
            dot_impl::<true>(a, b)
        }
        if has_avx2_fma() {
            #[allow(unsafe_code)]
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_impl::<false>(a, b)
}

#[inline(always)]
fn dot_impl<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot of vectors of different lengths");
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
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn rows_avx2(codes: &[i8], scales: &[f32], dim: usize, rows: &[u32], query: &QuantisedQuery, out: &mut [f32]) {
            rows_impl(codes, scales, dim, rows, query, out)
        }
        if has_avx2_fma() {
            #[allow(unsafe_code)]
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            return unsafe { rows_avx2(codes, scales, dim, rows, query, out) };
        }
    }
    rows_impl(codes, scales, dim, rows, query, out)
}

#[inline(always)]
fn rows_impl(codes: &[i8], scales: &[f32], dim: usize, rows: &[u32], query: &QuantisedQuery, out: &mut [f32]) {
    assert_eq!(query.codes.len(), dim, "query of the wrong dimension");
    assert_eq!(rows.len(), out.len(), "one output per row");
    let q = &query.codes[..];
    for (&r, slot) in rows.iter().zip(out.iter_mut()) {
        let r = r as usize;
        let row = &codes[r * dim..(r + 1) * dim];
        let sum: i32 = row.iter().zip(q).map(|(&c, &x)| i32::from(c) * i32::from(x)).sum();
        *slot = scales[r] * query.scale * sum as f32;
    }
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
pub(crate) fn dot_u4_rows(codes: &[u8], scales: &[f32], dim: usize, rows: &[u32], query: &ByteQuery, out: &mut [f32]) {
    assert_eq!(query.codes.len(), dim, "query of the wrong dimension");
    assert!(dim.is_multiple_of(2), "4-bit codes need an even dimension");
    assert_eq!(rows.len(), out.len(), "one output per row");
    let half = dim / 2;
    assert!(
        rows.iter().all(|&r| (r as usize + 1) * half <= codes.len() && (r as usize) < scales.len()),
        "row out of range"
    );
    // Σ (u − 8)·q = Σ u·q − 8·Σ q.
    let offset: i32 = 8 * query.codes.iter().map(|&q| i32::from(q)).sum::<i32>();
    #[cfg(target_arch = "x86_64")]
    if half.is_multiple_of(32) && has_avx2_fma() {
        #[allow(unsafe_code)]
        // SAFETY: AVX2 is present (checked just above); every row's `half` bytes lie inside
        // `codes` and its scale inside `scales` (asserted above), and the query has `dim`
        // codes, read 32 at a time up to `half` on each side.
        unsafe {
            rows4_avx2(codes, scales, half, rows, query, offset, out)
        };
        return;
    }
    let (low, high) = query.codes.split_at(half);
    for (&r, slot) in rows.iter().zip(out.iter_mut()) {
        let r = r as usize;
        let row = &codes[r * half..(r + 1) * half];
        let sum: i32 = row
            .iter()
            .zip(low)
            .zip(high)
            .map(|((&b, &l), &h)| i32::from(b & 15) * i32::from(l) + i32::from(b >> 4) * i32::from(h))
            .sum();
        *slot = scales[r] * query.scale * (sum - offset) as f32;
    }
}

/// [`dot_u4_rows`] with AVX2: 32 bytes (64 dimensions) a step, the low and high nibbles
/// multiplied by the query's bytes with `pmaddubsw` (u8 × i8 pairs; |sum| ≤ 2·15·127, no
/// saturation), the two halves added as `i16` (≤ 7620), then widened to `i32` by `pmaddwd`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(unsafe_code)]
unsafe fn rows4_avx2(
    codes: &[u8],
    scales: &[f32],
    half: usize,
    rows: &[u32],
    query: &ByteQuery,
    offset: i32,
    out: &mut [f32],
) {
    use std::arch::x86_64::*;
    // SAFETY (whole body): see the caller; loads are unaligned and within the slices.
    unsafe {
        let mask = _mm256_set1_epi8(0x0F);
        let ones = _mm256_set1_epi16(1);
        let q = query.codes.as_ptr();
        for (&r, slot) in rows.iter().zip(out.iter_mut()) {
            let row = codes.as_ptr().add(r as usize * half);
            let mut acc = _mm256_setzero_si256();
            let mut j = 0;
            while j < half {
                let bytes = _mm256_loadu_si256(row.add(j).cast());
                let low = _mm256_and_si256(bytes, mask);
                let high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
                let q_low = _mm256_loadu_si256(q.add(j).cast());
                let q_high = _mm256_loadu_si256(q.add(half + j).cast());
                let pairs = _mm256_add_epi16(_mm256_maddubs_epi16(low, q_low), _mm256_maddubs_epi16(high, q_high));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
                j += 32;
            }
            let sum128 = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
            let sum64 = _mm_add_epi32(sum128, _mm_unpackhi_epi64(sum128, sum128));
            let sum32 = _mm_add_epi32(sum64, _mm_shuffle_epi32(sum64, 1));
            let sum = _mm_cvtsi128_si32(sum32);
            *slot = *scales.get_unchecked(r as usize) * query.scale * (sum - offset) as f32;
        }
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
