//! (filled in by issue 11 work)
