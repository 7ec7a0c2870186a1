module faasched/functions

go 1.21
