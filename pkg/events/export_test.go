package events

// NewRecorderSized is NewRecorder with a queue of the given workers and
// size, so tests can order deliveries (one worker) or fill the queue.
var NewRecorderSized = newRecorder
