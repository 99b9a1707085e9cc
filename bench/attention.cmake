# bench_attention: fused vs materialized attention as interleaved A/B pairs (kernel, whole step, memory).
add_executable(bench_attention ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cpp)
target_link_libraries(bench_attention PRIVATE gridtrain_train gridtrain_model gridtrain_plan gridtrain_options)
