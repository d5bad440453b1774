-- The W3C traceparent a task was submitted with (SubmitTask header or field, webhook header): its run
-- joins that trace (the run's trace id is the caller's, its run span the caller's span's child).
ALTER TABLE tasks ADD COLUMN traceparent TEXT;
