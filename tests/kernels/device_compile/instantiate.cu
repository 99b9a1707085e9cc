// Instantiates every kernel template for float and double so that check.sh compiles all kernel bodies for
// the device (sm_90) through the mock Kokkos layer. Compile-only: nothing here runs.
#include "kernels/adamw_flat.hpp"
#include "kernels/kernels.hpp"
template void gt::embedding_forward<float>(float*, const int32_t*, const float*, const float*, int,int,int,int,int);
template void gt::embedding_backward<float>(float*, float*, const float*, const int32_t*, int,int,int,int,int);
template void gt::layernorm_forward<float>(float*, float*, float*, const float*, const float*, const float*, int, int);
template void gt::layernorm_backward<float>(float*, float*, float*, float*, const float*, const float*, const float*, const float*, const float*, int, int);
template void gt::linear_forward<float>(float*, const float*, const float*, const float*, int,int,int);
template void gt::linear_backward<float>(float*, float*, float*, float*, const float*, const float*, const float*, int,int,int);
template void gt::attention_forward<float>(float*, float*, const float*, int,int,int,int);
template void gt::attention_backward<float>(float*, float*, const float*, const float*, const float*, int,int,int,int);
template void gt::gelu_forward<float>(float*, const float*, long);
template void gt::gelu_backward<float>(float*, const float*, const float*, long);
template void gt::residual_forward<float>(float*, const float*, const float*, long);
template void gt::add_inplace<float>(float*, const float*, long);
template void gt::scale_inplace<float>(float*, long, float);
template void gt::fill<float>(float*, long, float);
template void gt::copy<float>(float*, const float*, long);
template double gt::sum_squares<float>(const float*, long);
template double gt::sum_squares_pieces<float>(const float*, long, const gt::PieceView&);
template void gt::adamw_pieces<float>(float*, long, const float*, long, float*, float*, long, const gt::PieceView&, float,
                                      float, float, float, int, float);
template void gt::ce_row_max<float>(float*, const float*, int, int);
template void gt::ce_row_sumexp<float>(float*, float*, const float*, const float*, const int32_t*, int, int, int);
template void gt::ce_loss<float>(float*, const float*, const float*, const float*, int);
template void gt::ce_backward_inplace<float>(float*, const float*, const float*, const int32_t*, int, int, int, float);
template void gt::adamw_update<float>(float*, const float*, float*, float*, long, float,float,float,float,float,int,float);
template void gt::adamw_update<double>(double*, const double*, double*, double*, long, double,double,double,double,double,int,double);
template void gt::attention_backward<double>(double*, double*, const double*, const double*, const double*, int,int,int,int);
template void gt::embedding_forward<double>(double*, const int32_t*, const double*, const double*, int,int,int,int,int);
template void gt::embedding_backward<double>(double*, double*, const double*, const int32_t*, int,int,int,int,int);
template void gt::layernorm_forward<double>(double*, double*, double*, const double*, const double*, const double*, int, int);
template void gt::layernorm_backward<double>(double*, double*, double*, double*, const double*, const double*, const double*, const double*, const double*, int, int);
template void gt::linear_forward<double>(double*, const double*, const double*, const double*, int,int,int);
template void gt::linear_backward<double>(double*, double*, double*, double*, const double*, const double*, const double*, int,int,int);
template void gt::attention_forward<double>(double*, double*, const double*, int,int,int,int);
template void gt::gelu_forward<double>(double*, const double*, long);
template void gt::gelu_backward<double>(double*, const double*, const double*, long);
template double gt::sum_squares<double>(const double*, long);
template void gt::ce_row_sumexp<double>(double*, double*, const double*, const double*, const int32_t*, int, int, int);
template void gt::ce_backward_inplace<double>(double*, const double*, const double*, const int32_t*, int, int, int, double);
