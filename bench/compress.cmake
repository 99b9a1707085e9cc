# bench_compress: top-k selection cost (exact vs DGC's sampled threshold) and compressed all-reduce time per
# bucket against the dense all-reduce (see the source header).
add_executable(bench_compress ${CMAKE_CURRENT_LIST_DIR}/bench_compress.cpp)
target_link_libraries(bench_compress PRIVATE gridtrain_compress gridtrain_options)
