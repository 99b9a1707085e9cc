# bench_allreduce: MPI library vs ring vs shm all-reduce bandwidth (see the source header).
add_executable(bench_allreduce ${CMAKE_CURRENT_LIST_DIR}/bench_allreduce.cpp)
target_link_libraries(bench_allreduce PRIVATE gridtrain_comm gridtrain_options)
