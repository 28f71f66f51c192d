//! What every import target checks: parsing never panics, and an error names where in the
//! file it is (a JSON path starting at `$`, or a line for syntax errors), because the CLI
//! prints that message and exits 3. A parsed set's records each carry their own path.

use membank_engine::ImportSet;
use membank_engine::core::InvalidInput;

/// Runs one parser on the input and checks the outcome's shape.
pub fn check(data: &[u8], parse: fn(&[u8]) -> Result<ImportSet, InvalidInput>) {
    match parse(data) {
        Ok(set) => {
            for user in &set.users {
                assert!(user.path.starts_with('$'), "user path {:?}", user.path);
                for record in &user.records {
                    assert!(record.path.starts_with(&user.path), "record path {:?} outside {:?}", record.path, user.path);
                    let _ = record.content();
                }
            }
        }
        Err(e) => {
            let message = e.to_string();
            assert!(message.contains('$') || message.contains("line "), "an import error without a place: {message}");
        }
    }
}
