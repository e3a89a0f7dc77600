//! What the Godot test runs print and what it means: the pass lines and failure markers of the
//! test scripts, the check counts they end with, and whether a GPU layer may skip. A leaf, so
//! that the modules that run Godot ([`crate::godot`], [`crate::godot_runs`], [`crate::demo`])
//! share it without depending on one another.

/// Printed by the scripts in `godot_project/tests/` (all but the demo smoke test) when every
/// check passed.
pub const PASS_LINE: &str = "PIPEWATER TESTS PASSED";
/// Output that means a test run went wrong even if Godot exited with 0: GDScript errors, Rust
/// panics reported by godot-rust, and resources Godot found still allocated at exit.
pub const FAILURE_MARKERS: [&str; 6] = ["SCRIPT ERROR", "[panic", "Parse Error", "leaked at exit", "RIDs of type", "RID of type"];

/// Printed by `godot_project/tests/test_demo_smoke.gd` when every check passed.
pub const SMOKE_PASS_LINE: &str = "DEMO SMOKE TEST PASSED";
/// Output that means the smoke test went wrong even if Godot exited with 0: GDScript errors,
/// engine errors, Rust panics, and what the demo left allocated at exit (Godot reports one
/// orphan node as a warning: `1 RID of type "CanvasItem" was leaked`, `ObjectDB instances
/// leaked at exit`).
pub const SMOKE_FAILURE_MARKERS: [&str; 7] = ["SCRIPT ERROR", "[panic", "Parse Error", "ERROR:", "leaked at exit", "RIDs of type", "RID of type"];

/// Whether `PIPEWATER_REQUIRE_GPU=1`: a GPU test that cannot run is then a failure.
pub fn gpu_required() -> bool {
    std::env::var("PIPEWATER_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Whether a run passed: exit 0, `pass_line` printed, none of `markers` printed.
pub fn verdict_with(exited_ok: bool, output: &str, markers: &[&str], pass_line: &str) -> Result<(), String> {
    if let Some(marker) = markers.iter().find(|m| output.contains(*m)) {
        return Err(format!("the output contains `{marker}`"));
    }
    if !exited_ok {
        return Err("non-zero exit".into());
    }
    if !output.contains(pass_line) {
        return Err(format!("it did not print `{pass_line}`"));
    }
    Ok(())
}

/// `N` of the line `N checks passed` the test scripts end with.
pub fn passed_checks(output: &str) -> Option<usize> {
    output.lines().rev().find_map(|l| l.trim().strip_suffix(" checks passed")?.parse().ok())
}

/// `(failed, total)` of the line `F of N checks failed`.
pub fn failed_checks(output: &str) -> Option<(usize, usize)> {
    output.lines().rev().find_map(|l| {
        let (failed, total) = l.trim().strip_suffix(" checks failed")?.split_once(" of ")?;
        Some((failed.parse().ok()?, total.parse().ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headless_run_passes_only_with_exit_0_the_pass_line_and_no_script_error() {
        let good = format!("ok 1\nERROR: PipeWater: cell_size = -1 is out of range\n{PASS_LINE}\n");
        let cases = [
            (true, good.clone(), true),
            (false, good.clone(), false),
            (true, "ok 1\n".to_string(), false),
            (true, format!("SCRIPT ERROR: Invalid call\n{PASS_LINE}"), false),
            (true, format!("ERROR: [panic src/node.rs:10]\n{PASS_LINE}"), false),
            (true, format!("{PASS_LINE}\nERROR: 3 RID allocations of type 'N10RenderingDevice6BufferE' were leaked at exit."), false),
        ];
        for (exit_ok, output, expected) in cases {
            let got = verdict_with(exit_ok, &output, &FAILURE_MARKERS, PASS_LINE);
            println!("exit ok {exit_ok}, output {output:?} -> {got:?}");
            assert_eq!(got.is_ok(), expected);
        }
    }

    /// What the demo printed at exit while it kept a TextureRect out of the tree: the smoke test
    /// passed its checks, and the run must still fail.
    #[test]
    fn a_smoke_run_that_leaks_a_node_at_exit_fails() {
        let leaked = format!(
            "11 checks passed\n{SMOKE_PASS_LINE}\nWARNING: 1 RID of type \"CanvasItem\" was leaked.\n     at: _free_rids (./servers/rendering/renderer_canvas_cull.cpp:2483)\nWARNING: ObjectDB instances leaked at exit (run with --verbose for details).\n"
        );
        let clean = format!("11 checks passed\n{SMOKE_PASS_LINE}\n");
        let got = (verdict_with(true, &leaked, &SMOKE_FAILURE_MARKERS, SMOKE_PASS_LINE), verdict_with(true, &clean, &SMOKE_FAILURE_MARKERS, SMOKE_PASS_LINE));
        println!("leaking run -> {:?}; clean run -> {:?}", got.0, got.1);
        assert!(got.0.is_err() && got.1.is_ok());
        assert!(verdict_with(true, &leaked.replace(SMOKE_PASS_LINE, PASS_LINE), &FAILURE_MARKERS, PASS_LINE).is_err(), "the other layers fail on a single leaked RID too");
    }

    #[test]
    fn the_counts_come_from_the_last_summary_line() {
        let passed = "ok   - a\n   5 checks passed in the log\n147 checks passed\nPIPEWATER TESTS PASSED\n";
        let failed = "FAIL - a\n3 of 147 checks failed\nPIPEWATER TESTS FAILED\n";
        println!("{:?} {:?}", passed_checks(passed), failed_checks(failed));
        assert_eq!(passed_checks(passed), Some(147));
        assert_eq!(passed_checks(failed), None);
        assert_eq!(failed_checks(failed), Some((3, 147)));
        assert_eq!(failed_checks(passed), None);
    }
}
