//! Locks that outlive a panic: the one place that decides what a poisoned
//! lock means.
//!
//! A thread that panicked while holding one of memd's locks leaves data
//! that is still whole (every critical section keeps its data valid at each
//! step, and none is left half-written across an unwind), so the daemon
//! goes on with it instead of spreading the panic to every later request.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `m`, through a poisoned lock.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `l` for reading, through a poisoned lock.
pub fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Takes `l` for writing, through a poisoned lock.
pub fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_still_opens() {
        let m = Mutex::new(1);
        let l = RwLock::new(1);
        let _ = std::panic::catch_unwind(|| {
            let _m = m.lock().unwrap();
            let _l = l.write().unwrap();
            panic!("poison both");
        });
        assert!(m.is_poisoned() && l.is_poisoned());
        *lock(&m) += 1;
        *write(&l) += 1;
        assert_eq!((*lock(&m), *read(&l)), (2, 2));
    }
}
