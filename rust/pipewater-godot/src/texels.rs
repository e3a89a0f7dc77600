//! Texture packing: snapshot texels → the bytes of Godot images, and heightmap images → terrain.
//!
//! Both output textures are `Image.FORMAT_RGBAF` (four 32-bit floats per texel, native byte
//! order, which is what Godot expects), `width × height` texels, row `y` = grid row `y` (local
//! −Z first), column `x` = grid column `x` (local −X first):
//!
//! - `height_texture`: R = water surface height (local Y, m), G = water depth (m), B = terrain
//!   height (local Y, m), A = 1 where the cell is wet (depth > 1 mm) else 0.
//! - `flux_texture`: R = flow velocity along local +X (m/s), G = along local +Z (m/s), B = speed
//!   (m/s), A = discharge per metre of width (m²/s).
//!
//! 32-bit floats are the default because surface heights need them (a half float has 1.5 cm steps
//! at 32 m and 6 cm at 100 m), and the packing is then a plain copy. The node's
//! `half_float_textures` trades that precision for half the bytes (`Image.FORMAT_RGBAH`).

use pipewater_core::quanta::MAX_TERRAIN_ABS;
use pipewater_core::state::copy_in_parallel;

/// Bytes per texel of both output textures (RGBA, 32-bit float each).
pub const BYTES_PER_TEXEL: usize = 16;

/// Bytes per texel of the half-float textures (RGBA, 16-bit float each).
pub const BYTES_PER_HALF_TEXEL: usize = 8;

/// Texels per parallel chunk of the half-float packing (64 KiB of output).
const HALF_CHUNK_TEXELS: usize = 8192;

/// Writes `texels` into `out` as `Image.FORMAT_RGBAH` bytes (native byte order), rounding each
/// value to the nearest half float, on the thread pool. `out` holds exactly
/// [`BYTES_PER_HALF_TEXEL`] bytes per texel.
pub fn pack_half_texels(texels: &[[f32; 4]], out: &mut [u8]) {
    use half::slice::HalfFloatSliceExt;
    use rayon::prelude::*;
    assert_eq!(out.len(), texels.len() * BYTES_PER_HALF_TEXEL, "output sized for the texels");
    out.par_chunks_mut(HALF_CHUNK_TEXELS * BYTES_PER_HALF_TEXEL).zip(texels.par_chunks(HALF_CHUNK_TEXELS)).for_each(|(out, texels)| {
        let values: &[f32] = bytemuck::cast_slice(texels);
        let mut halves = vec![half::f16::ZERO; values.len()];
        halves.convert_from_f32_slice(values);
        out.copy_from_slice(bytemuck::cast_slice(&halves));
    });
}

/// The bytes of an `Image.FORMAT_RGBAF` image holding `texels` (a view, no copy).
pub fn texel_bytes(texels: &[[f32; 4]]) -> &[u8] {
    bytemuck::cast_slice(texels)
}

/// Copies `texels` into `out` as `FORMAT_RGBAF` bytes, reusing its allocation, on the thread pool
/// like the node's copy into its textures' byte arrays.
pub fn pack_texels_into(texels: &[[f32; 4]], out: &mut Vec<u8>) {
    let bytes = texel_bytes(texels);
    out.resize(bytes.len(), 0);
    copy_in_parallel(out, bytes);
}

/// Expected byte length of a `FORMAT_RGBAF` image of `width × height` texels.
pub fn rgbaf_len(width: u32, height: u32) -> usize {
    width as usize * height as usize * BYTES_PER_TEXEL
}

/// Terrain heights (local Y, m) from the bytes of an `Image.FORMAT_RF` image (one 32-bit float
/// per pixel, no mipmaps) of exactly `width × height` pixels: `offset + value · scale`.
///
/// Errors name the argument and what was expected; non-finite results (NaN pixels, overflow)
/// and heights past ±1e6 m are rejected rather than passed on to the simulation.
pub fn terrain_from_rf_bytes(bytes: &[u8], width: u32, height: u32, scale: f32, offset: f32) -> Result<Vec<f32>, String> {
    let expected = width as usize * height as usize * 4;
    if bytes.len() != expected {
        return Err(format!("heightmap has {} bytes of FORMAT_RF data, expected {expected} ({width} × {height} pixels)", bytes.len()));
    }
    let mut terrain = Vec::with_capacity(expected / 4);
    for (i, chunk) in bytes.chunks_exact(4).enumerate() {
        let value = f32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let h = offset + value * scale;
        if !h.is_finite() || h.abs() > MAX_TERRAIN_ABS {
            return Err(format!(
                "heightmap pixel {i} gives height {h} (value {value} × height_scale {scale} + height_offset {offset}): valid range is -{MAX_TERRAIN_ABS} ..= {MAX_TERRAIN_ABS} m"
            ));
        }
        terrain.push(h);
    }
    Ok(terrain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_float_texels_round_to_the_nearest_half_across_chunk_edges() {
        let texels: Vec<[f32; 4]> = (0..HALF_CHUNK_TEXELS * 2 + 37).map(|i| [i as f32 * 0.01, -1.5, 65504.0, 1.0e-8]).collect();
        let mut out = vec![0u8; texels.len() * BYTES_PER_HALF_TEXEL];
        pack_half_texels(&texels, &mut out);
        let halves: &[u16] = bytemuck::cast_slice(&out);
        let mut worst = 0.0f32;
        for (t, h) in texels.iter().zip(halves.chunks_exact(4)) {
            for k in 0..4 {
                let back = half::f16::from_bits(h[k]).to_f32();
                let spacing = if t[k] == 0.0 { 0.0 } else { 2f32.powi(t[k].abs().log2().floor() as i32 - 10) };
                let error = (back - t[k]).abs();
                assert!(error <= spacing / 2.0 + 6.0e-8, "texel {t:?} channel {k}: {back} vs {}", t[k]);
                if t[k] != 0.0 {
                    worst = worst.max(error / t[k].abs());
                }
            }
        }
        println!("{} texels packed; worst relative rounding error {worst:.2e} (half float: ≤ 2⁻¹¹ = {:.2e}, subnormals aside)", texels.len(), 2f32.powi(-11));
        assert_eq!(half::f16::from_bits(halves[4 * (HALF_CHUNK_TEXELS + 3) + 1]).to_f32(), -1.5, "exact values stay exact past a chunk edge");
    }

    #[test]
    fn texel_bytes_are_the_four_floats_of_each_texel_in_order() {
        let texels = [[1.0f32, 2.0, 3.0, 4.0], [-0.5, 0.25, 1.0e6, 0.0]];
        let bytes = texel_bytes(&texels);
        let decoded: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
        println!("{} bytes -> {decoded:?}", bytes.len());
        assert_eq!(bytes.len(), 2 * BYTES_PER_TEXEL);
        assert_eq!(decoded, vec![1.0, 2.0, 3.0, 4.0, -0.5, 0.25, 1.0e6, 0.0]);
    }

    #[test]
    fn packed_image_has_the_documented_size_for_a_grid() {
        let (w, h) = (37u32, 11u32);
        let texels: Vec<[f32; 4]> = (0..w * h).map(|i| [i as f32, 0.0, 0.0, 1.0]).collect();
        let mut out = vec![0xAB; 3];
        pack_texels_into(&texels, &mut out);
        println!("{w}×{h} grid -> {} bytes, expected {}", out.len(), rgbaf_len(w, h));
        assert_eq!(out.len(), rgbaf_len(w, h));
        // Texel (x = 5, y = 2) sits at byte (2·w + 5)·16.
        let at = (2 * w as usize + 5) * BYTES_PER_TEXEL;
        let r = f32::from_ne_bytes([out[at], out[at + 1], out[at + 2], out[at + 3]]);
        println!("texel (5, 2) red = {r}, expected {}", 2 * w + 5);
        assert_eq!(r, (2 * w + 5) as f32);
    }

    #[test]
    fn rf_heightmap_is_scaled_and_offset() {
        let values = [0.0f32, 0.5, 1.0, 0.25];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let terrain = terrain_from_rf_bytes(&bytes, 2, 2, 10.0, -1.0).unwrap();
        println!("values {values:?} × 10 − 1 -> {terrain:?}");
        assert_eq!(terrain, vec![-1.0, 4.0, 9.0, 1.5]);
    }

    #[test]
    fn rf_heightmap_of_the_wrong_size_or_with_nan_is_rejected() {
        let bytes: Vec<u8> = [0.0f32, 1.0, 2.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let short = terrain_from_rf_bytes(&bytes, 2, 2, 1.0, 0.0);
        let nan: Vec<u8> = [0.0f32, f32::NAN, 2.0, 3.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let with_nan = terrain_from_rf_bytes(&nan, 2, 2, 1.0, 0.0);
        let huge = terrain_from_rf_bytes(&bytes[4..8].repeat(4), 2, 2, 2.0e6, 0.0);
        println!("short: {short:?}\nNaN: {with_nan:?}\noverflow: {huge:?}");
        assert!(short.unwrap_err().contains("expected 16"));
        assert!(with_nan.unwrap_err().contains("pixel 1"));
        assert!(huge.unwrap_err().contains("1000000 m"));
    }
}
