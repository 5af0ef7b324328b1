package fleet

// RunTestWorker is runTestWorker for the external test package.
var RunTestWorker = runTestWorker
