//! Property: no sequence of requests from two sessions in two namespaces ever
//! shows or changes a row of one namespace through the other.

use std::collections::HashMap;

use crate::common::Daemon;
use memd_client::blocking::Client;
use memd_client::{AddRequest, Error, Filter, ListRequest, SearchRequest, UpdateRequest};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[derive(Debug, Clone)]
enum Op {
    Add { ns: usize, word: usize },
    Update { ns: usize, pick: usize, word: usize },
    Forget { ns: usize, pick: usize },
    Get { ns: usize, pick: usize },
    List { ns: usize },
    Search { ns: usize, word: usize },
}

const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "shared", "deploy"];

fn op() -> impl Strategy<Value = Op> {
    let ns = 0..2usize;
    let pick = 0..64usize;
    let word = 0..WORDS.len();
    prop_oneof![
        3 => (ns.clone(), word.clone()).prop_map(|(ns, word)| Op::Add { ns, word }),
        2 => (ns.clone(), pick.clone(), word.clone())
            .prop_map(|(ns, pick, word)| Op::Update { ns, pick, word }),
        1 => (ns.clone(), pick.clone()).prop_map(|(ns, pick)| Op::Forget { ns, pick }),
        2 => (ns.clone(), pick).prop_map(|(ns, pick)| Op::Get { ns, pick }),
        1 => ns.clone().prop_map(|ns| Op::List { ns }),
        2 => (ns, word).prop_map(|(ns, word)| Op::Search { ns, word }),
    ]
}

const NAMESPACES: [&str; 2] = ["team-a", "team-b"];

#[test]
fn namespaces_never_leak() {
    let d = Daemon::start();
    let clients: Vec<Client> = NAMESPACES
        .iter()
        .map(|ns| {
            let mut o = d.opts();
            o.namespace = ns.to_string();
            Client::connect(o).unwrap()
        })
        .collect();
    // id → namespace of every row that exists. The runner's closure is `Fn`
    // (it reruns cases while shrinking): the state lives in a RefCell and
    // carries over, which the model accounts for.
    let state = std::cell::RefCell::new((clients, HashMap::<i64, usize>::new(), 0u64));
    let mut runner = TestRunner::new(Config {
        // PROPTEST_CASES runs more.
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(24),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&proptest::collection::vec(op(), 1..25), |ops| {
            let mut guard = state.borrow_mut();
            let (clients, owner, counter) = &mut *guard;
            for op in ops {
                *counter += 1;
                // Picks reach any id ever made, so cross-namespace ids come up.
                let all: Vec<i64> = {
                    let mut v: Vec<i64> = owner.keys().copied().collect();
                    v.sort_unstable();
                    v
                };
                let pick = |p: usize| all.get(p % all.len().max(1)).copied().unwrap_or(1);
                match op {
                    Op::Add { ns, word } => {
                        let r = clients[ns]
                            .add(AddRequest {
                                content: format!("{} note {}", WORDS[word], *counter),
                                ..Default::default()
                            })
                            .unwrap();
                        owner.insert(r.id.unwrap(), ns);
                    }
                    Op::Update { ns, pick: p, word } => {
                        let id = pick(p);
                        let r = clients[ns].update(UpdateRequest {
                            id,
                            content: Some(format!("{} edit {}", WORDS[word], *counter)),
                            ..Default::default()
                        });
                        match (owner.get(&id), r) {
                            (Some(o), Ok(m)) => {
                                prop_assert_eq!(*o, ns, "updated a row of another namespace");
                                prop_assert_eq!(&m.memory.namespace, NAMESPACES[ns]);
                            }
                            (Some(o), Err(Error::NotFound(_))) => prop_assert_ne!(*o, ns),
                            (None, Err(Error::NotFound(_))) => {}
                            (o, r) => prop_assert!(false, "update {id} ({o:?}): {r:?}"),
                        }
                    }
                    Op::Forget { ns, pick: p } => {
                        let id = pick(p);
                        match (owner.get(&id).copied(), clients[ns].forget(id, None)) {
                            (Some(o), Ok(_)) => {
                                prop_assert_eq!(o, ns, "deleted a row of another namespace");
                                owner.remove(&id);
                            }
                            (Some(o), Err(Error::NotFound(_))) => prop_assert_ne!(o, ns),
                            (None, Err(Error::NotFound(_))) => {}
                            (o, r) => prop_assert!(false, "forget {id} ({o:?}): {r:?}"),
                        }
                    }
                    Op::Get { ns, pick: p } => {
                        let id = pick(p);
                        match (owner.get(&id).copied(), clients[ns].get(id)) {
                            (Some(o), Ok(m)) => {
                                prop_assert_eq!(o, ns, "read a row of another namespace");
                                prop_assert_eq!(&m.namespace, NAMESPACES[ns]);
                            }
                            (Some(o), Err(Error::NotFound(_))) => prop_assert_ne!(o, ns),
                            (None, Err(Error::NotFound(_))) => {}
                            (o, r) => prop_assert!(false, "get {id} ({o:?}): {r:?}"),
                        }
                    }
                    Op::List { ns } => {
                        let l = clients[ns]
                            .list(ListRequest {
                                filter: Filter::default(),
                                limit: 1000,
                                offset: 0,
                            })
                            .unwrap();
                        for m in &l.memories {
                            prop_assert_eq!(&m.namespace, NAMESPACES[ns]);
                            prop_assert_eq!(owner.get(&m.id), Some(&ns));
                        }
                        let mine = owner.values().filter(|o| **o == ns).count();
                        prop_assert_eq!(l.memories.len(), mine);
                    }
                    Op::Search { ns, word } => {
                        let r = clients[ns]
                            .search(SearchRequest {
                                query: WORDS[word].into(),
                                filter: Filter::default(),
                                limit: 100,
                                mode: Default::default(),
                                syntax: Default::default(),
                                explain: false,
                                offset: 0,
                            })
                            .unwrap();
                        for h in &r.hits {
                            prop_assert_eq!(&h.memory.namespace, NAMESPACES[ns]);
                            prop_assert_eq!(owner.get(&h.memory.id), Some(&ns));
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}
