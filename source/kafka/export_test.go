package kafka

// SetFetchHook sets the function a partition's reader goroutine calls
// before it reads, until the returned function undoes it.
func SetFetchHook(f func(partition int)) (undo func()) {
	old := fetchHook.Swap(&f)
	return func() { fetchHook.Store(old) }
}
