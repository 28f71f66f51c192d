//! Archiving under the configured policy, with the importance and layers just computed.

use std::collections::HashSet;

use membank_core::MemoryId;
use serde_json::json;

use super::cycle::Cycle;

impl Cycle {
    /// Plans the policy's sweep over the items; the memories it archives (each with its
    /// numbers, importance and layer) leave the cycle.
    pub(super) fn archive_fading(&mut self) {
        let policy = &self.policy;
        let items = &mut self.items;
        let plan = policy.plan_sweep(items.iter().map(|item| (item.memory.id, &item.state)), self.now);
        self.report.deferred = plan.deferred;
        let mut archive = Vec::with_capacity(plan.archive.len());
        let archived: HashSet<MemoryId> = plan.archive.iter().map(|a| a.id).collect();
        for assessment in &plan.archive {
            let mut data = policy.archive_event_data(assessment);
            if let (Some(object), Some(item)) =
                (data.as_object_mut(), items.iter().find(|i| i.memory.id == assessment.id))
            {
                object.insert("importance".into(), json!(item.state.importance));
                object.insert("layer".into(), json!(item.state.layer.as_str()));
                object.insert("by".into(), json!("maintenance"));
            }
            archive.push((assessment.id, data));
        }
        self.archive = archive;
        self.report.archived = plan.archive;
        items.retain(|item| !archived.contains(&item.memory.id));
    }
}
