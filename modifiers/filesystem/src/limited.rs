//! [`FileLimits::apply`]: a backend that says its [`FileLimits`] (the
//! file tools ask [`Backend::limits`]); every other call is its inner
//! backend's (a [`Wrap`]). Apart from `limits.rs`, which the backend trait
//! itself names.

use std::sync::Arc;

use crate::backend::{Backend, BackendFactory, BackendSource};
use crate::limits::FileLimits;
use crate::wrap::Wrap;

impl FileLimits {
    /// `backend` with these limits (a factory stays a factory): every call
    /// goes through unchanged, and [`Backend::limits`] says these, so the
    /// file tools keep to them.
    pub fn apply(self, backend: impl Into<BackendSource>) -> BackendSource {
        match backend.into() {
            BackendSource::Ready(inner) => BackendSource::Ready(Arc::new(Limited {
                limits: self,
                inner,
            })),
            BackendSource::Factory(factory) => {
                BackendSource::Factory(BackendFactory::new(move |net| {
                    Arc::new(Limited {
                        limits: self,
                        inner: factory.build(net),
                    })
                }))
            }
        }
    }
}

/// A backend that says its [`FileLimits`]; everything else is its inner
/// backend's.
struct Limited {
    limits: FileLimits,
    inner: Arc<dyn Backend>,
}

impl Wrap for Limited {
    fn inner(&self) -> &dyn Backend {
        self.inner.as_ref()
    }

    fn limits(&self) -> FileLimits {
        self.limits
    }
}
