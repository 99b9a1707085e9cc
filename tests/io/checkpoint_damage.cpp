// checkpoint_damage FILE KIND: damages a checkpoint in place in one of the ways the checkpoint tests do
// (checkpoint_bad_test, checkpoint_resume_test, reliability_*), for the test that `gridtrain inspect` and a
// resume reach the same verdict on every kind (tests/cli/test_inspect_resume.sh). Plain serial HDF5 and POSIX;
// a checksum rewritten "valid" uses the test-side formula (io_test_util.hpp), never the library's.
//   checkpoint_damage --list   prints the kinds, one a line, with the verdict a resume must reach (accept|refuse)
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tests/io/h5_edit.hpp"

namespace {

using iotest::h5_flip_in_dataset;
using iotest::h5_poke;
using iotest::h5_replace_dataset;

void delete_attr(const std::string& path, const std::string& obj, const std::string& name) {
  const hid_t f = iotest::h5_open_rw(path);
  H5Adelete_by_name(f, obj.c_str(), name.c_str(), H5P_DEFAULT);
  H5Fclose(f);
}

void set_attr(hid_t loc, const std::string& name, hid_t type, const void* v) {
  if (H5Aexists(loc, name.c_str()) > 0) H5Adelete(loc, name.c_str());
  const hid_t s = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(loc, name.c_str(), type, s, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, v);
  H5Aclose(a);
  H5Sclose(s);
}
void set_root_i64(const std::string& path, const std::string& name, int64_t v) {
  const hid_t f = iotest::h5_open_rw(path);
  set_attr(f, name, H5T_NATIVE_INT64, &v);
  H5Fclose(f);
}
void set_root_f64(const std::string& path, const std::string& name, double v) {
  const hid_t f = iotest::h5_open_rw(path);
  set_attr(f, name, H5T_NATIVE_DOUBLE, &v);
  H5Fclose(f);
}
void set_root_str(const std::string& path, const std::string& name, const std::string& v) {
  const hid_t f = iotest::h5_open_rw(path);
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, v.size() + 1);
  set_attr(f, name, t, v.c_str());
  H5Tclose(t);
  H5Fclose(f);
}

// One byte of the file flipped in the first occurrence of a text (h5_flip_in_dataset: in a dataset's data).
void flip_text(const std::string& path, const std::string& needle) {
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(io)), {});
  const size_t at = all.find(needle);
  if (at == std::string::npos) throw std::runtime_error("'" + needle + "' not in " + path);
  io.seekp(static_cast<std::streamoff>(at + 2));
  const char c = static_cast<char>(all[at + 2] ^ 0x01);
  io.write(&c, 1);
}

struct Kind {
  const char* verdict;  // what a resume of this file with its own configuration must do
  std::function<void(const std::string&)> damage;
};

std::map<std::string, Kind> kinds() {
  namespace fs = std::filesystem;
  return {
      {"none", {"accept", [](const std::string&) {}}},
      {"missing_dataset", {"refuse", [](const std::string& p) { h5_replace_dataset(p, "params/h.0.ln_1.b", {}); }}},
      {"missing_moment", {"refuse", [](const std::string& p) { h5_replace_dataset(p, "adam_v/wpe", {}); }}},
      {"wrong_shape", {"refuse", [](const std::string& p) { h5_replace_dataset(p, "params/wte", {7, 5}); }}},
      {"wrong_dtype", {"refuse", [](const std::string& p) { h5_replace_dataset(p, "params/h.0.ln_1.b", {32}, H5T_IEEE_F64LE); }}},
      {"checksum", {"refuse", [](const std::string& p) { h5_flip_in_dataset(p, "adam_m/h.0.attn.qkv.w"); }}},
      {"no_checksum_attr", {"refuse", [](const std::string& p) { delete_attr(p, "params/wte", "checksum"); }}},
      {"nan_weight", {"refuse", [](const std::string& p) { h5_poke(p, "params/h.1.mlp.fc.w", 3, NAN); }}},
      {"inf_moment", {"refuse", [](const std::string& p) { h5_poke(p, "adam_v/wte", 1, INFINITY); }}},
      {"extra_dataset_bad", {"refuse", [](const std::string& p) {
         h5_replace_dataset(p, "extra/notes", {4});
         h5_flip_in_dataset(p, "extra/notes");
       }}},
      {"kind_byte", {"refuse", [](const std::string& p) { flip_text(p, "checkpoint"); }}},
      {"no_kind", {"refuse", [](const std::string& p) { delete_attr(p, "/", "gridtrain_kind"); }}},
      {"kind_tokens", {"refuse", [](const std::string& p) { set_root_str(p, "gridtrain_kind", "tokens"); }}},
      {"no_format_version", {"refuse", [](const std::string& p) { delete_attr(p, "/", "format_version"); }}},
      {"format_version_2", {"refuse", [](const std::string& p) { set_root_i64(p, "format_version", 2); }}},
      {"no_step", {"refuse", [](const std::string& p) { delete_attr(p, "/", "step"); }}},
      {"step_negative", {"refuse", [](const std::string& p) { set_root_i64(p, "step", -5); }}},
      {"step_real", {"refuse", [](const std::string& p) { set_root_f64(p, "step", 2.5); }}},
      {"samples_negative", {"refuse", [](const std::string& p) { set_root_i64(p, "samples_done", -5); }}},
      {"skipped_negative", {"refuse", [](const std::string& p) { set_root_i64(p, "skipped_steps", -1); }}},
      {"grid_zero", {"refuse", [](const std::string& p) { set_root_i64(p, "grid.tp", 0); }}},
      {"scaler_without_counters", {"refuse", [](const std::string& p) { set_root_f64(p, "loss_scale", 1024.0); }}},
      {"scaler_nan", {"refuse", [](const std::string& p) {
         set_root_f64(p, "loss_scale", NAN);
         set_root_i64(p, "loss_scale.clean_steps", 0);
         set_root_i64(p, "loss_scale.hysteresis_left", 2);
       }}},
      {"no_model", {"refuse", [](const std::string& p) { delete_attr(p, "/", "model"); }}},
      {"other_model", {"refuse", [](const std::string& p) {
         set_root_str(p, "model", "gpt2 n_layer=3 d_model=32 n_head=4 seq_len=16 vocab_size=64");
       }}},
      {"config_garbled", {"accept", [](const std::string& p) { set_root_str(p, "config", "[model\nnot a deck"); }}},
      {"truncated", {"refuse", [](const std::string& p) { fs::resize_file(p, fs::file_size(p) / 2); }}},
      {"not_hdf5", {"refuse", [](const std::string& p) { std::ofstream(p, std::ios::trunc) << "not hdf5 at all\n"; }}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const std::map<std::string, Kind> all = kinds();
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const auto& [name, k] : all) std::printf("%s %s\n", name.c_str(), k.verdict);
    return 0;
  }
  if (argc != 3 || !all.count(argv[2])) {
    std::fprintf(stderr, "usage: checkpoint_damage FILE KIND | --list\n");
    return 2;
  }
  try {
    all.at(argv[2]).damage(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint_damage: %s\n", e.what());
    return 1;
  }
  return 0;
}
