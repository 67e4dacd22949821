package sweep

// Temporal is the Temporal server a sweep's cells run on (flow sweep
// --temporal), as sweep.json records it: a resume goes back there unless
// told otherwise.
type Temporal struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace,omitempty"`
	TaskQueue string `json:"task_queue,omitempty"`
}
