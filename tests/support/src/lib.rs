//! What the workspace's integration tests share: the external servers they
//! start, the clients that drive them, and the rule that says which tests
//! could not run and why. A dev-dependency of every crate's one
//! integration-test binary; never a dependency of a library.

pub mod chromedriver;
pub mod own_binary;
pub mod phoenix;
pub mod python;
pub mod serve;
#[cfg(feature = "server")]
pub mod server;
pub mod sse;
