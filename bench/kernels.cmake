# bench_kernels: times every compute kernel at the `small` preset shapes (see bench_kernels.cpp).
add_executable(bench_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.cpp)
target_link_libraries(bench_kernels PRIVATE gridtrain_kernels gridtrain_core gridtrain_options)
