//! A blocking wrapper around [`crate::Client`] for code without an async
//! runtime: each call runs on a private current-thread runtime.

use crate::{
    AddRequest, AddResult, ConnectOptions, ForgetResult, Hit, ListRequest, Memory, MemoryList,
    MemoryReply, Result, SearchRequest, SearchResult, UpdateRequest, Welcome,
};

/// A session with the daemon, blocking.
#[derive(Debug)]
pub struct Client {
    rt: tokio::runtime::Runtime,
    inner: crate::Client,
}

impl Client {
    /// Connects and opens a session.
    ///
    /// # Errors
    /// As [`crate::Client::connect`]; also an I/O error when the runtime
    /// cannot be created.
    pub fn connect(opts: ConnectOptions) -> Result<Client> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let inner = rt.block_on(crate::Client::connect(opts))?;
        Ok(Client { rt, inner })
    }

    /// The handshake's answer.
    pub fn welcome(&self) -> &Welcome {
        self.inner.welcome()
    }

    /// See [`crate::Client::add`].
    ///
    /// # Errors
    /// As the async method.
    pub fn add(&mut self, req: AddRequest) -> Result<AddResult> {
        self.rt.block_on(self.inner.add(req))
    }

    /// See [`crate::Client::get`].
    ///
    /// # Errors
    /// As the async method.
    pub fn get(&mut self, id: i64) -> Result<Memory> {
        self.rt.block_on(self.inner.get(id))
    }

    /// See [`crate::Client::list`].
    ///
    /// # Errors
    /// As the async method.
    pub fn list(&mut self, req: ListRequest) -> Result<MemoryList> {
        self.rt.block_on(self.inner.list(req))
    }

    /// See [`crate::Client::update`].
    ///
    /// # Errors
    /// As the async method.
    pub fn update(&mut self, req: UpdateRequest) -> Result<MemoryReply> {
        self.rt.block_on(self.inner.update(req))
    }

    /// See [`crate::Client::forget`].
    ///
    /// # Errors
    /// As the async method.
    pub fn forget(&mut self, id: i64, expect_rev: Option<i64>) -> Result<ForgetResult> {
        self.rt.block_on(self.inner.forget(id, expect_rev))
    }

    /// See [`crate::Client::search`].
    ///
    /// # Errors
    /// As the async method.
    pub fn search(&mut self, req: SearchRequest) -> Result<SearchResult> {
        self.rt.block_on(self.inner.search(req))
    }

    /// See [`crate::Client::search_text`].
    ///
    /// # Errors
    /// As the async method.
    pub fn search_text(&mut self, query: &str, limit: u32) -> Result<Vec<Hit>> {
        self.rt.block_on(self.inner.search_text(query, limit))
    }

    /// See [`crate::Client::supersede`].
    ///
    /// # Errors
    /// As the async method.
    pub fn supersede(&mut self, old: i64, new: i64) -> Result<crate::proto::SupersedeResult> {
        self.rt.block_on(self.inner.supersede(old, new))
    }

    /// See [`crate::Client::history`].
    ///
    /// # Errors
    /// As the async method.
    pub fn history(&mut self, id: i64) -> Result<crate::proto::History> {
        self.rt.block_on(self.inner.history(id))
    }

    /// See [`crate::Client::confirm`].
    ///
    /// # Errors
    /// As the async method.
    pub fn confirm(&mut self, id: i64) -> Result<Memory> {
        self.rt.block_on(self.inner.confirm(id))
    }

    /// See [`crate::Client::prune`].
    ///
    /// # Errors
    /// As the async method.
    pub fn prune(
        &mut self,
        dry_run: bool,
        all_namespaces: bool,
    ) -> Result<crate::proto::PruneResult> {
        self.rt.block_on(self.inner.prune(dry_run, all_namespaces))
    }

    /// See [`crate::Client::task`].
    ///
    /// # Errors
    /// As the async method.
    pub fn task(&mut self, id: i64, status: &str, expect_rev: Option<i64>) -> Result<Memory> {
        self.rt.block_on(self.inner.task(id, status, expect_rev))
    }

    /// See [`crate::Client::status`].
    ///
    /// # Errors
    /// As the async method.
    pub fn status(&mut self) -> Result<serde_json::Value> {
        self.rt.block_on(self.inner.status())
    }

    /// See [`crate::Client::inject`].
    ///
    /// # Errors
    /// As the async method.
    pub fn inject(&mut self) -> Result<crate::proto::Injection> {
        self.rt.block_on(self.inner.inject())
    }

    /// See [`crate::Client::compacted`].
    ///
    /// # Errors
    /// As the async method.
    pub fn compacted(&mut self) -> Result<()> {
        self.rt.block_on(self.inner.compacted())
    }

    /// See [`crate::Client::refresh`].
    ///
    /// # Errors
    /// As the async method.
    pub fn refresh(&mut self) -> Result<()> {
        self.rt.block_on(self.inner.refresh())
    }

    /// See [`crate::Client::stop`].
    ///
    /// # Errors
    /// As the async method.
    pub fn stop(&mut self) -> Result<()> {
        self.rt.block_on(self.inner.stop())
    }
}
