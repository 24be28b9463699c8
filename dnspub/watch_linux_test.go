package dnspub

import "testing"

func haveInotify(t *testing.T) bool {
	tr := newFileTracker(t.TempDir()+"/x", discardLogger())
	defer tr.close()
	_, ok := tr.(*inotifyTracker)
	return ok
}
