//! Moving memories in and out: `export` writes the lossless `membank-export` JSON Lines format
//! and reads it back, `import` loads other formats through its parsers.

pub mod export;
pub mod import;
