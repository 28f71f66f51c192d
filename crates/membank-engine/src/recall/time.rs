//! The time a query names: resolving its expression to days (and a year when it names
//! none), the two rankings restricted to those days, and the date filter the response
//! reports.

use chrono::NaiveDate;
use membank_core::{Scope, Status, text};
use membank_store::{ListQuery, SearchFilter};

use super::rankings::Rankings;
use super::search::Search;
use super::setup::Setup;
use super::types::{DateFilter, YearChoice};
use crate::expansion::TimeBoost;
use crate::temporal;
use crate::{Engine, EngineError};

/// A query's time expression resolved to days.
pub(super) struct QueryTime {
    /// The expression and its days.
    pub boost: TimeBoost,
    /// How the year was chosen when the expression named a day without one.
    pub year_inferred: Option<YearChoice>,
}

impl Engine {
    /// The days a time expression in the query names, unless the caller set the days (a
    /// filter, not a boost) or time boosts are off. A day named without its year becomes
    /// the most recent such day with memories ([`Engine::yearless_day`]).
    pub(super) fn resolve_time(&self, setup: &Setup) -> Result<Option<QueryTime>, EngineError> {
        let (request, config) = (setup.request, setup.config);
        let boosts = request.day_from.is_none()
            && request.day_to.is_none()
            && config.exact_time_weight + config.fuzzy_time_weight > 0.0;
        if !boosts {
            return Ok(None);
        }
        let Some(mut boost) = self.time_boost(&request.scope, &request.query, setup.now)? else { return Ok(None) };
        let mut year_inferred = None;
        if let Some((month, day)) = boost.expression.month_day {
            year_inferred = Some(match self.yearless_day(&request.scope, &setup.filter, month, day, boost.from)? {
                Some(date) => {
                    (boost.from, boost.to) = (date, date);
                    YearChoice::LatestWithMemories
                }
                None => YearChoice::Latest,
            });
        }
        Ok(Some(QueryTime { boost, year_inferred }))
    }

    /// The dense and lexical rankings restricted to the query's days join the fusion, with
    /// the exact or the fuzzy time weight.
    pub(super) fn day_lists(
        &self,
        setup: &Setup,
        time: Option<&QueryTime>,
        search: &Search,
        rankings: &mut Rankings,
    ) -> Result<(), EngineError> {
        let Some(time) = time else { return Ok(()) };
        let config = setup.config;
        let weight = if time.boost.expression.exact { config.exact_time_weight } else { config.fuzzy_time_weight };
        let in_range =
            SearchFilter { day_from: Some(time.boost.from), day_to: Some(time.boost.to), ..setup.filter.clone() };
        let (dense, lexical) = self.searches(setup, &search.vector, &search.terms, &in_range)?;
        rankings.add_days(&dense, &lexical, weight * config.dense_weight, weight * config.lexical_weight);
        Ok(())
    }

    /// The day a date named without a year means ([`temporal::yearless_candidates`]): the
    /// most recent such day not after `latest` (the query's own resolution) on which the
    /// person has memories that `filter` admits, looking back to their first memory; `None`
    /// when no such day has any (the caller keeps `latest`).
    fn yearless_day(
        &self,
        scope: &Scope,
        filter: &SearchFilter,
        month: u32,
        day: u32,
        latest: NaiveDate,
    ) -> Result<Option<NaiveDate>, EngineError> {
        let statuses = if filter.include_archived {
            vec![Status::Active, Status::Archived, Status::Superseded]
        } else {
            vec![Status::Active]
        };
        let first = self.store.list(
            scope,
            &ListQuery { statuses, kinds: filter.kinds.clone(), limit: 1, oldest_first: true, ..Default::default() },
        )?;
        let Some(first) = first.first() else { return Ok(None) };
        let candidates = temporal::yearless_candidates(month, day, latest, first.day);
        let with_memories = self.store.days_with_memories(scope, &candidates, filter)?;
        Ok(candidates.into_iter().find(|d| with_memories.contains(d)))
    }
}

/// The text the query is searched as: without its time expression ("may" in "May 4th" is
/// not a topic), unless that leaves no words at all.
pub(super) fn search_text(setup: &Setup, time: Option<&QueryTime>) -> String {
    let query = &setup.request.query;
    time.map(|t| t.boost.expression.strip(query))
        .filter(|q| !text::terms(q).is_empty())
        .unwrap_or_else(|| query.clone())
}

/// The days the recall was boosted towards (the query's time expression) or restricted to
/// (the caller's range), for the response.
pub(super) fn date_filter(setup: &Setup, time: Option<&QueryTime>) -> Option<DateFilter> {
    let request = setup.request;
    match time {
        Some(t) => Some(DateFilter {
            from: Some(t.boost.from),
            to: Some(t.boost.to),
            from_query: Some(t.boost.expression.text(&request.query).to_string()),
            boost: true,
            exact: t.boost.expression.exact,
            year_inferred: t.year_inferred,
        }),
        None if request.day_from.is_some() || request.day_to.is_some() => Some(DateFilter {
            from: request.day_from,
            to: request.day_to,
            from_query: None,
            boost: false,
            exact: true,
            year_inferred: None,
        }),
        None => None,
    }
}
