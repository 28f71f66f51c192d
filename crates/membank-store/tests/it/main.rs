//! The SQLite store at its trait boundary: against an in-memory model under random
//! operation sequences (two handles on one file, as two processes would be), and
//! opening database files of every released schema version.

#![allow(missing_docs)]

mod migrations;
mod model;
mod search;
