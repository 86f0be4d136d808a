//! What a person sees: the plugin in a real pseudo-terminal (util-linux `script`), colour on,
//! compared whole with the view it prints piped with colour off at the same width.

use std::process::Command;

use super::Cluster;

/// The screen of `args` in a `width`-column pty (colour on, stderr left out), colour codes
/// and carriage returns removed, and whether it held any colour.
pub fn in_terminal(c: &Cluster, who: &str, width: usize, args: &[&str]) -> (String, bool) {
    let bin = env!("CARGO_BIN_EXE_kubectl-coord");
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let inner = format!("stty cols {width} rows 50; exec '{bin}' {} 2>/dev/null", quoted.join(" "));
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &inner, "/dev/null"])
        .env("KUBECONFIG", c.kubeconfig(who))
        .env_remove("NO_COLOR")
        .env_remove("COLUMNS")
        .output()
        .expect("util-linux script");
    let raw = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(out.status.success() || out.status.code() == Some(3), "{args:?}: {:?}\n{raw}", out.status);
    let ansi = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    (ansi.replace_all(&raw, "").to_string(), raw.contains('\x1b'))
}

/// The same view piped: colour off, fitted to $COLUMNS.
pub fn piped(c: &Cluster, who: &str, width: usize, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-coord"))
        .args(args)
        .args(["--color", "never"])
        .env("KUBECONFIG", c.kubeconfig(who))
        .env("COLUMNS", width.to_string())
        .output()
        .expect("kubectl-coord");
    assert!(out.status.success() || out.status.code() == Some(3), "{args:?}: {:?}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that the terminal shows exactly the piped view, painted: no line wider than the
/// terminal, nothing wrapped twice. Live output moves with the clock (a lease renewed 2s ago,
/// then 3s), so the screen must equal a piped view taken just before or just after it; a
/// few tries rule out a second that turned in between. Returns the screen and whether it
/// held colour.
#[track_caller]
pub fn assert_screen_is_the_plain_view(c: &Cluster, who: &str, width: usize, args: &[&str]) -> (String, bool) {
    let mut last = None;
    for _ in 0..4 {
        let before = piped(c, who, width, args);
        let (shown, painted) = in_terminal(c, who, width, args);
        for line in shown.lines() {
            assert!(line.chars().count() <= width, "{args:?} at {width} columns:\n{line}\n\n{shown}");
        }
        assert!(shown.lines().count() > 1, "{args:?}: {shown}");
        if shown == before || shown == piped(c, who, width, args) {
            return (shown, painted);
        }
        last = Some((shown, before));
    }
    let (shown, plain) = last.unwrap();
    panic!("{args:?} at {width} columns: the terminal showed\n{shown}\n---- where piped it is\n{plain}");
}
