//! Randomised operation sequences over several users: no operation for one user ever
//! reads or changes another user's memories (the reference implementation's sweeps and
//! index spanned every user).

use std::collections::BTreeMap;

use membank_engine::core::{Memory, MemoryId, Status};
use membank_engine::{RecallRequest, SweepRequest};
use membank_store::{ListQuery, Store};
use proptest::prelude::*;

use crate::{scope, world};

const USERS: [&str; 3] = ["ana", "ben", " cleo "];
const WORDS: [&str; 6] = ["cat", "garden", "birthday", "coffee", "猫咪", "trip"];

#[derive(Debug, Clone)]
enum Op {
    Remember { user: usize, word: usize },
    Recall { user: usize, word: usize },
    Forget { user: usize, target: usize },
    Restore { user: usize, target: usize },
    Pin { user: usize, target: usize },
    Erase { user: usize, target: usize },
    Sweep { user: usize, days: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    let user = 0..USERS.len();
    prop_oneof![
        3 => (user.clone(), 0..WORDS.len()).prop_map(|(user, word)| Op::Remember { user, word }),
        2 => (user.clone(), 0..WORDS.len()).prop_map(|(user, word)| Op::Recall { user, word }),
        1 => (user.clone(), 0..64usize).prop_map(|(user, target)| Op::Forget { user, target }),
        1 => (user.clone(), 0..64usize).prop_map(|(user, target)| Op::Restore { user, target }),
        1 => (user.clone(), 0..64usize).prop_map(|(user, target)| Op::Pin { user, target }),
        1 => (user.clone(), 0..64usize).prop_map(|(user, target)| Op::Erase { user, target }),
        1 => (user, 0..6i64).prop_map(|(user, days)| Op::Sweep { user, days }),
    ]
}

/// Everything observable about one user's memories.
fn snapshot(store: &dyn Store, user: &str) -> BTreeMap<MemoryId, Memory> {
    let query = ListQuery { statuses: Status::ALL.to_vec(), limit: 10_000, ..Default::default() };
    store.list(&scope(user), &query).unwrap().into_iter().map(|m| (m.id, m)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn operations_never_cross_users(ops in proptest::collection::vec(op(), 1..40)) {
        let w = world();
        // Every id ever created, with its owner: targets pick from all users' ids on purpose.
        let mut ids: Vec<(usize, MemoryId)> = Vec::new();
        for op in ops {
            let actor = match &op { Op::Remember { user, .. } | Op::Recall { user, .. } | Op::Forget { user, .. } | Op::Restore { user, .. } | Op::Pin { user, .. } | Op::Erase { user, .. } | Op::Sweep { user, .. } => *user };
            let others: Vec<(usize, BTreeMap<MemoryId, Memory>)> = (0..USERS.len()).filter(|u| *u != actor).map(|u| (u, snapshot(w.store.as_ref(), USERS[u]))).collect();
            let target = |t: &usize| ids.get(t % ids.len().max(1)).copied();
            let actor_scope = scope(USERS[actor]);
            match &op {
                Op::Remember { word, .. } => {
                    let m = w.turn(USERS[actor], &format!("we talked about {}", WORDS[*word]));
                    ids.push((actor, m.id));
                }
                Op::Recall { word, .. } => {
                    let response = w.engine.recall(RecallRequest::new(actor_scope.clone(), WORDS[*word], 10)).unwrap();
                    for hit in response.results {
                        prop_assert_eq!(hit.memory.scope.user.as_str(), USERS[actor].trim());
                    }
                }
                Op::Forget { target: t, .. } | Op::Restore { target: t, .. } | Op::Pin { target: t, .. } | Op::Erase { target: t, .. } => {
                    if let Some((owner, id)) = target(t) {
                        let result = match &op {
                            Op::Forget { .. } => w.engine.forget(&actor_scope, id, None),
                            Op::Restore { .. } => w.engine.restore(&actor_scope, id),
                            Op::Pin { .. } => w.engine.set_pinned(&actor_scope, id, true),
                            _ => w.engine.erase(&actor_scope, id),
                        };
                        if owner != actor {
                            prop_assert_eq!(result.unwrap_err().code(), "not_found");
                        }
                    }
                }
                Op::Sweep { days, .. } => {
                    w.advance_days(*days);
                    w.engine.sweep(SweepRequest { scope: actor_scope.clone(), now: None, dry_run: false, max_archive_fraction: None }).unwrap();
                }
            }
            for (user, before) in others {
                prop_assert_eq!(&snapshot(w.store.as_ref(), USERS[user]), &before, "{:?} by {} changed {}", op, USERS[actor], USERS[user]);
            }
        }
        prop_assert!(w.store.integrity_check().unwrap().is_empty());
    }
}
