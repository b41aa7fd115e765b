//! Who answers for an exposed item: the catalog routes by it, the search index names it, and
//! neither needs the other to say so.

/// Who answers for an item: the built-in server or an upstream by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// mcpx's own `mcpx` server.
    Builtin,
    /// The upstream at this index.
    Upstream(usize),
}

/// Where an exposed tool or prompt really lives.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Its server.
    pub owner: Owner,
    /// Its name on that server.
    pub name: String,
}

impl Route {
    /// The route to `name` on `owner`'s server.
    pub fn new(owner: Owner, name: &str) -> Route {
        Route {
            owner,
            name: name.to_owned(),
        }
    }
}
