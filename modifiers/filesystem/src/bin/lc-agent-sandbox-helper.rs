//! `lc-agent-sandbox-helper`: the program a bubblewrap sandbox runs inside
//! itself for a program that is not `lc-agent` (tests, embedders): the
//! spawner of a kept sandbox and the allow-list's network helper. Give its
//! path to `Bubblewrap::keeping`. Run by hand, it says what it is for.

fn main() {
    lc_agent_filesystem::run_helper_if_asked();
    eprintln!(
        "lc-agent-sandbox-helper: started by lc-agent's bubblewrap sandboxes only (as their \
         spawner or network helper); see `Bubblewrap::keeping`"
    );
    std::process::exit(2);
}
