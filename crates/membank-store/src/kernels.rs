//! The dense scan's numeric kernels: an `f32` dot product, and the int8 screening pass
//! (each row's `i8` codes against the query quantised to `i16`, summed exactly in `i32`). Each is compiled twice, for the baseline
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
    if scale > 0.0 { (x / scale).round().clamp(-127.0, 127.0) as i8 } else { 0 }
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
        let codes = query.iter().map(|&x| if scale > 0.0 { (x / scale).round().clamp(-top, top) as i16 } else { 0 }).collect();
        Self { codes, scale }
    }
}

/// For each row index `rows[i]`, `out[i] = scales[r] * query.scale * Σ_j codes[r * dim + j] * query.codes[j]`,
/// the integer sum exact.
pub(crate) fn dot_i8_rows(codes: &[i8], scales: &[f32], dim: usize, rows: &[u32], query: &QuantisedQuery, out: &mut [f32]) {
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
    fn int8_scores_stay_within_their_error_bound() {
        let dim = 384;
        let rows: Vec<Vec<f32>> = (0..50).map(|s| vector(s + 10, dim)).collect();
        let query = vector(99, dim);
        let scales: Vec<f32> = rows.iter().map(|r| quantise_scale(r)).collect();
        let codes: Vec<i8> = rows.iter().zip(&scales).flat_map(|(r, &s)| r.iter().map(move |&x| quantise(x, s))).collect();
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
