//! The helpers every resource's handlers share: one item lookup answer ([`get_one`]), one
//! state change answer ([`change`], refused with a [`Refusal`]), Arcane's action message, the
//! prune and short-ID helpers, and string arrays from bodies.

use axum::response::Response;
use serde_json::{Value, json};

use crate::ctx::Ctx;
use crate::state::{InEnv, State};

/// Why a state change was refused: the status and `detail` of the problem+json answer.
pub(crate) struct Refusal {
    pub status: u16,
    pub detail: String,
}

/// A refusal with `status` and `detail`.
pub(crate) fn refuse(status: u16, detail: impl Into<String>) -> Refusal {
    Refusal {
        status,
        detail: detail.into(),
    }
}

/// `{"message": text}`, the `data` of Arcane's action answers.
pub(crate) fn message(text: &str) -> Value {
    json!({ "message": text })
}

/// Answers the item `find` projects out of the state (its `data`), or a problem with
/// `status` and the text `missing` gives when there is none. The state is locked only while
/// `find` runs.
pub(crate) fn get_one(
    ctx: &Ctx,
    find: impl FnOnce(&State) -> Option<Value>,
    status: u16,
    missing: impl FnOnce() -> String,
) -> Response {
    let found = find(&ctx.sh.state());
    match found {
        Some(v) => ctx.ok(v, vec![]),
        None => ctx.problem(status, &missing()),
    }
}

/// Runs `change` on the state under its lock and answers its outcome: the `data` of a
/// success, or the problem of a refusal. The lock is released before answering.
pub(crate) fn change(
    ctx: &Ctx,
    change: impl FnOnce(&mut State) -> Result<Value, Refusal>,
) -> Response {
    let outcome = change(&mut ctx.sh.state());
    match outcome {
        Ok(v) => ctx.ok(v, vec![]),
        Err(r) => ctx.problem(r.status, &r.detail),
    }
}

/// Removes the items of `list` that `marks` flags (one flag an item, judged beforehand
/// against the whole state) and returns them in their order.
pub(crate) fn take_marked<T>(list: &mut Vec<T>, marks: &[bool]) -> Vec<T> {
    let mut taken = Vec::new();
    let mut kept = Vec::with_capacity(list.len());
    for (item, doomed) in std::mem::take(list)
        .into_iter()
        .zip(marks.iter().copied().chain(std::iter::repeat(false)))
    {
        if doomed {
            taken.push(item);
        } else {
            kept.push(item);
        }
    }
    *list = kept;
    taken
}

/// The index of the one item of `env` whose ID (as `id` gives it) starts with `prefix`, as
/// Docker resolves short IDs: none for a prefix under 4 characters or one that fits several.
pub(crate) fn by_unique_prefix<T: InEnv>(
    items: &[T],
    env: &str,
    prefix: &str,
    id: impl Fn(&T) -> &str,
) -> Option<usize> {
    if prefix.len() < 4 {
        return None;
    }
    let mut found = items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.env() == env && id(i).starts_with(prefix))
        .map(|(n, _)| n);
    match (found.next(), found.next()) {
        (Some(n), None) => Some(n),
        _ => None,
    }
}

/// The strings of a JSON array (other values skipped); empty when `v` is not an array.
pub(crate) fn str_array(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_marked_removes_the_flagged_items_in_order() {
        let mut list = vec![1, 2, 3, 4, 5];
        let taken = take_marked(&mut list, &[true, false, true, false]);
        assert_eq!(taken, vec![1, 3]);
        // Items past the end of the marks are kept.
        assert_eq!(list, vec![2, 4, 5]);
    }

    #[test]
    fn str_array_keeps_only_strings() {
        assert_eq!(
            str_array(Some(&json!(["a", 1, "b", null]))),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(str_array(Some(&json!({"a": "b"}))).is_empty());
        assert!(str_array(None).is_empty());
    }
}
