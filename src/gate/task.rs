//! Tasks: memories of category `task` whose metadata `status` moves through
//! pending → in_progress → completed | cancelled. Open tasks carry
//! `surface = "startup"`, so `memd list --meta surface=startup` gives the
//! pending work at session start.

/// The category of tasks.
pub const CATEGORY: &str = "task";

/// Task states.
pub const STATES: &[&str] = &["pending", "in_progress", "completed", "cancelled"];

/// Whether a task in `state` is still open.
pub fn is_open(state: &str) -> bool {
    matches!(state, "pending" | "in_progress")
}

/// Checks that `state` is a task state.
///
/// # Errors
/// A message naming the states.
pub fn state(state: &str) -> Result<(), String> {
    if STATES.contains(&state) {
        Ok(())
    } else {
        Err(format!(
            "unknown task status `{state}`: expected one of {}",
            STATES.join(", ")
        ))
    }
}

/// Checks a transition.
///
/// # Errors
/// A message naming the allowed moves.
pub fn transition(from: &str, to: &str) -> Result<(), String> {
    state(to)?;
    let allowed = match from {
        "pending" => matches!(to, "in_progress" | "completed" | "cancelled"),
        "in_progress" => matches!(to, "pending" | "completed" | "cancelled"),
        _ => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(format!(
            "a task cannot go from {from} to {to} (pending → in_progress → completed | \
             cancelled; closed tasks stay closed)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions() {
        for (from, to, ok) in [
            ("pending", "in_progress", true),
            ("pending", "completed", true),
            ("pending", "cancelled", true),
            ("in_progress", "completed", true),
            ("in_progress", "cancelled", true),
            ("in_progress", "pending", true),
            ("pending", "pending", false),
            ("completed", "pending", false),
            ("completed", "in_progress", false),
            ("cancelled", "completed", false),
            ("pending", "done", false),
            ("weird", "completed", false),
        ] {
            assert_eq!(transition(from, to).is_ok(), ok, "{from} -> {to}");
        }
        assert!(is_open("pending") && is_open("in_progress"));
        assert!(!is_open("completed") && !is_open("cancelled"));
    }
}
