//! Editing a memory's text with its history kept (the REST `PATCH` of a memory).
//!
//! The edited text is a new memory that inherits the old one's kind, source, time, day,
//! labels and forgetting state, re-embedded and re-indexed; the old memory is superseded
//! by it (see [`membank_store::Store::supersede`]). Erased, archived and superseded
//! memories cannot be edited: restore first.

use membank_core::memory::turn_content;
use membank_core::{InvalidInput, Kind, MemoryId, Scope, Status};
use membank_store::NewMemory;

use crate::ops::validate_text;
use crate::{Engine, EngineError};

/// New text for a memory. Turns take `user_text` and/or `assistant_text`; other kinds take `text`.
#[derive(Debug, Clone)]
pub struct EditRequest {
    /// Whose memory.
    pub scope: Scope,
    /// Which memory.
    pub id: MemoryId,
    /// New text of a note (or any non-turn memory).
    pub text: Option<String>,
    /// New words of the person, for a turn.
    pub user_text: Option<String>,
    /// New reply of the assistant, for a turn.
    pub assistant_text: Option<String>,
}

impl Engine {
    /// Edits a memory; returns the new (active) memory. The old one is superseded by it.
    pub fn edit(&self, request: EditRequest) -> Result<membank_core::Memory, EngineError> {
        for (field, value) in
            [("text", &request.text), ("user_text", &request.user_text), ("assistant_text", &request.assistant_text)]
        {
            if let Some(value) = value {
                validate_text(field, value)?;
            }
        }
        let old = self.store.get(&request.scope, request.id)?;
        if old.status != Status::Active {
            return Err(EngineError::Conflict(format!(
                "memory {} is {}, only an active memory can be edited",
                old.id, old.status
            )));
        }
        let now = self.clock.now();
        let mut memory = old.clone();
        match old.kind {
            Kind::Turn => {
                if request.text.is_some() {
                    return Err(
                        InvalidInput::new("text", "a turn is edited through user_text and assistant_text").into()
                    );
                }
                if request.user_text.is_none() && request.assistant_text.is_none() {
                    return Err(InvalidInput::new("user_text", "give user_text, assistant_text or both").into());
                }
                let user_text = request.user_text.or(old.user_text.clone()).unwrap_or_default();
                let assistant_text = request.assistant_text.or(old.assistant_text.clone());
                memory.content = Some(turn_content(&user_text, assistant_text.as_deref()));
                memory.user_text = Some(user_text);
                memory.assistant_text = assistant_text;
            }
            _ => {
                if request.user_text.is_some() || request.assistant_text.is_some() {
                    return Err(InvalidInput::new("text", format!("a {} is edited through text", old.kind)).into());
                }
                let text = request.text.ok_or_else(|| InvalidInput::new("text", "is required"))?;
                memory.content = Some(text);
            }
        }
        memory.id = MemoryId::generate(now);
        memory.recorded_at = now;
        memory.derived_from = vec![old.id];
        memory.superseded_by = None;
        let content = memory.content.clone().unwrap_or_default();
        let vector = self
            .embedder
            .embed(&[content.as_str()])?
            .pop()
            .ok_or_else(|| EngineError::Storage("the embedder returned no vector".into()))?;
        Ok(self.store.supersede(
            &request.scope,
            old.id,
            NewMemory { memory, embedding: Some((self.model(), vector)) },
        )?)
    }
}
