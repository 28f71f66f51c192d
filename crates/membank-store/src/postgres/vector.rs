//! pgvector's `vector` type in its binary wire format, so vectors travel as 4 bytes a
//! component instead of decimal text the server must parse.
//!
//! The format (pgvector's `vector_send`/`vector_recv`): the dimension as a big-endian
//! `u16`, two unused bytes, then each component as a big-endian `f32`. Written here rather
//! than taken from the `pgvector` crate: it is thirty lines, and the crate would be one more
//! dependency for them.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

type BoxError = Box<dyn Error + Sync + Send>;

/// A vector to send.
#[derive(Debug)]
pub(super) struct VectorRef<'a>(pub &'a [f32]);

/// A vector received.
#[derive(Debug)]
pub(super) struct Vector(pub Vec<f32>);

fn is_vector(ty: &Type) -> bool {
    ty.name() == "vector"
}

impl ToSql for VectorRef<'_> {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let dim = u16::try_from(self.0.len())
            .map_err(|_| format!("a vector of {} dimensions is longer than pgvector allows", self.0.len()))?;
        out.reserve(4 + 4 * self.0.len());
        out.put_u16(dim);
        out.put_u16(0);
        for x in self.0 {
            out.put_f32(*x);
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        is_vector(ty)
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Vector {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        if raw.len() < 4 {
            return Err("a vector value shorter than its header".into());
        }
        let dim = usize::from(u16::from_be_bytes([raw[0], raw[1]]));
        let body = &raw[4..];
        if body.len() != dim * 4 {
            return Err(format!("a vector of {dim} dimensions with {} bytes of data", body.len()).into());
        }
        Ok(Vector(body.chunks_exact(4).map(|c| f32::from_be_bytes([c[0], c[1], c[2], c[3]])).collect()))
    }

    fn accepts(ty: &Type) -> bool {
        is_vector(ty)
    }
}
