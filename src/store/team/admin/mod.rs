//! What `memd team` does on the server: the schema, people's rights,
//! review (see [`super`]).

pub mod grants;
pub mod review;
pub mod schema;
