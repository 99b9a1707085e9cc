# bench_checkpoint: write/read bandwidth of a gpt2-124m-sized sharded checkpoint vs dd (see the source header).
add_executable(bench_checkpoint ${CMAKE_CURRENT_LIST_DIR}/bench_checkpoint.cpp)
target_link_libraries(bench_checkpoint PRIVATE gridtrain_io gridtrain_options)
