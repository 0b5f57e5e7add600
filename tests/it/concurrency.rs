//! Many sessions at once over the real socket.

use crate::common::Daemon;
use memd_client::{AddRequest, Client, ListRequest};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_clients_add_and_search_concurrently() {
    let d = Daemon::start();
    const CLIENTS: usize = 32;
    const EACH: usize = 25;
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let opts = d.opts();
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(opts).await.unwrap();
            let mut acked = Vec::new();
            for n in 0..EACH {
                let content = format!("client{c} note{n} shared words about concurrency");
                let r = client
                    .add(AddRequest {
                        content: content.clone(),
                        tags: vec![format!("c{c}")],
                        ..Default::default()
                    })
                    .await
                    .expect("add");
                assert!(r.accepted);
                acked.push((r.id.unwrap(), content));
                let hits = client
                    .search_text(&format!("client{c} note{n}"), 5)
                    .await
                    .expect("search");
                assert!(
                    hits.iter().any(|h| h.memory.id == r.id.unwrap()),
                    "a session finds its own acknowledged write"
                );
            }
            acked
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    assert_eq!(all.len(), CLIENTS * EACH);
    let mut client = d.client().await;
    let listed = client
        .list(ListRequest {
            filter: Default::default(),
            limit: 1000,
            offset: 0,
        })
        .await
        .unwrap();
    assert_eq!(listed.memories.len(), CLIENTS * EACH);
    for (id, content) in &all {
        assert_eq!(&client.get(*id).await.unwrap().content, content);
    }
    let mut ids: Vec<i64> = all.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), CLIENTS * EACH, "ids are unique");
    let status = client.status().await.unwrap();
    let commits = status["stats"]["commits"].as_u64().unwrap();
    let writes = status["stats"]["writes"].as_u64().unwrap();
    // Every add, plus the daemon's batched access-count writes.
    assert!(writes >= (CLIENTS * EACH) as u64, "{writes}");
    assert!(
        commits < writes,
        "group commit: {commits} commits for {writes} writes"
    );
}
