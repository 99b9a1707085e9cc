// Text files -> HDF5 token dataset, checked with the plain HDF5 API against the input files themselves:
// token dtype, document offsets, end-of-document ids, the held-out split, every attribute, and the decoded
// documents equal to the inputs. Also the dtype rule for every vocabulary size boundary.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "src/core/error.hpp"
#include "src/data/dataset_file.hpp"
#include "src/data/dataset_writer.hpp"
#include "src/data/prepare.hpp"
#include "src/data/tokenizer_byte.hpp"
#include "src/data/tokenizer_gpt2.hpp"
#include "tests/data/data_helpers.hpp"
#include "tests/data/test_util.hpp"

using namespace gt;
namespace fs = std::filesystem;

namespace {

struct Corpus {
  std::string dir;
  std::map<std::string, std::string> files;  // path -> content of every document prepare must take
};

// Documents of very different sizes in nested directories, plus what prepare must skip: an empty file and a
// symbolic link (an alias of a document).
Corpus make_corpus(const std::string& root) {
  Corpus c;
  c.dir = root + "/corpus";
  fs::create_directories(c.dir + "/sub/deeper");
  fs::create_directories(c.dir + "/many");
  auto add = [&](const std::string& rel, const std::string& text) {
    test::write_file(c.dir + "/" + rel, text);
    c.files[c.dir + "/" + rel] = text;
  };
  add("a.txt", "Hello, world!\n");
  add("b.txt", "Second document.\nIt has two lines.\n");
  add("sub/c.txt", "caf\xC3\xA9 \xE2\x82\xAC 100 \xF0\x9F\x98\x80\n");  // é € 😀
  std::string big;
  for (int i = 0; i < 3000; ++i) big += "line " + std::to_string(i) + " of the long document\n";
  add("sub/deeper/d.txt", big);
  add("e.txt", std::string("binary\0inside\xFF\n", 15));
  for (int i = 0; i < 12; ++i) add("many/f" + std::to_string(10 + i) + ".txt", "small file number " + std::to_string(i) + "\n");
  test::write_file(c.dir + "/empty.txt", "");
  fs::create_symlink(c.dir + "/a.txt", c.dir + "/sub/link.txt");
  return c;
}

struct SplitContent {
  std::vector<uint64_t> tokens, offsets;
};

SplitContent raw_split(const std::string& path, const std::string& split) {
  return {test::raw_dataset(path, split + "/tokens").u64, test::raw_dataset(path, split + "/doc_offsets").u64};
}

// The documents of a split: the token ranges between offsets, each ending in eot (which is stripped).
std::vector<std::vector<int32_t>> documents_of(const SplitContent& s, uint64_t eot) {
  std::vector<std::vector<int32_t>> docs;
  for (size_t d = 0; d < s.offsets.size(); ++d) {
    const uint64_t b = s.offsets[d], e = d + 1 < s.offsets.size() ? s.offsets[d + 1] : s.tokens.size();
    EXPECT_LT(b, e);
    EXPECT_EQ(s.tokens[e - 1], eot) << "document " << d << " does not end in the eot id";
    docs.emplace_back(s.tokens.begin() + long(b), s.tokens.begin() + long(e) - 1);
  }
  return docs;
}

// Every check of a prepared corpus that does not depend on the tokenizer's ids.
void check_prepared(const std::string& out, const Corpus& c, const Tokenizer& tok, double val_fraction,
                    const std::string& dtype_note, size_t token_bytes) {
  ASSERT_TRUE(fs::exists(out));
  // no temporary left next to the output
  for (const auto& e : fs::directory_iterator(fs::path(out).parent_path()))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();

  // attributes
  EXPECT_EQ(test::raw_attr_strings(out, "gridtrain_kind"), std::vector<std::string>{"dataset"});
  EXPECT_EQ(test::raw_attr_ints<int64_t>(out, "format_version"), std::vector<int64_t>{1});
  EXPECT_EQ(test::raw_attr_strings(out, "tokenizer"), std::vector<std::string>{tok.name()});
  EXPECT_EQ(test::raw_attr_ints<int64_t>(out, "vocab_size"), std::vector<int64_t>{tok.vocab_size()});
  EXPECT_EQ(test::raw_attr_ints<int64_t>(out, "eot_id"), std::vector<int64_t>{tok.eot_id()});
  const std::vector<std::string> names = test::raw_attr_strings(out, "source_files");
  const std::vector<int64_t> bytes = test::raw_attr_ints<int64_t>(out, "source_bytes");
  const std::vector<uint64_t> fnv = test::raw_attr_ints<uint64_t>(out, "source_fnv1a64");
  const std::vector<int64_t> split = test::raw_attr_ints<int64_t>(out, "source_split");
  std::vector<std::string> expected_names;
  for (const auto& kv : c.files) expected_names.push_back(kv.first);  // std::map: sorted, as prepare orders them
  ASSERT_EQ(names, expected_names) << "the empty file and the symbolic link must be skipped";
  ASSERT_EQ(bytes.size(), names.size());
  ASSERT_EQ(fnv.size(), names.size());
  ASSERT_EQ(split.size(), names.size());
  int64_t total = 0, val_bytes = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& text = c.files.at(names[i]);
    EXPECT_EQ(bytes[i], int64_t(text.size())) << names[i];
    EXPECT_EQ(fnv[i], test::ref_fnv1a64(text)) << names[i];
    EXPECT_TRUE(split[i] == 0 || split[i] == 1) << names[i];
    total += bytes[i];
    val_bytes += split[i] == 1 ? bytes[i] : 0;
  }
  EXPECT_TRUE(test::raw_has_attr(out, "corpus_fnv1a64"));

  // the held-out split: whole documents, at least one, at most val_fraction of the bytes, some train left
  int n_val = 0;
  for (int64_t s : split) n_val += int(s);
  EXPECT_GE(n_val, 1);
  EXPECT_LT(n_val, int(names.size()));
  EXPECT_LE(double(val_bytes), val_fraction * double(total));

  // datasets: dtype, offsets, eot, counts, and each document decodes to its file
  for (const std::string sp : {"train", "val"}) {
    for (const std::string ds : {"tokens", "doc_offsets"}) {
      const test::RawDataset r = test::raw_dataset(out, sp + "/" + ds);
      ASSERT_TRUE(r.exists) << sp << "/" << ds;
      EXPECT_EQ(r.cls, H5T_INTEGER);
      EXPECT_TRUE(r.little_endian);
      if (ds == "tokens") {
        EXPECT_EQ(r.bytes, token_bytes) << sp << ": tokens must be " << dtype_note;
        EXPECT_FALSE(r.is_signed) << sp << ": tokens must be " << dtype_note;
      } else {
        EXPECT_EQ(r.bytes, 8u);
        EXPECT_TRUE(r.is_signed);
      }
    }
    const SplitContent content = raw_split(out, sp);
    EXPECT_EQ(test::raw_attr_ints<int64_t>(out, sp + "_tokens"), std::vector<int64_t>{int64_t(content.tokens.size())});
    EXPECT_EQ(test::raw_attr_ints<int64_t>(out, sp + "_documents"),
              std::vector<int64_t>{int64_t(content.offsets.size())});
    ASSERT_FALSE(content.offsets.empty());
    EXPECT_EQ(content.offsets[0], 0u);
    const auto docs = documents_of(content, uint64_t(tok.eot_id()));
    std::vector<std::string> expected;
    for (size_t i = 0; i < names.size(); ++i)
      if (split[i] == (sp == "val" ? 1 : 0)) expected.push_back(c.files.at(names[i]));
    ASSERT_EQ(docs.size(), expected.size()) << sp;
    std::string all_decoded, all_expected;
    for (size_t d = 0; d < docs.size(); ++d) {
      for (int32_t id : docs[d]) ASSERT_LT(id, tok.vocab_size());
      const std::string text = tok.decode(docs[d].data(), docs[d].size());
      EXPECT_EQ(text, expected[d]) << sp << " document " << d;
      all_decoded += text;
      all_expected += expected[d];
    }
    EXPECT_EQ(all_decoded, all_expected) << sp;
  }
}

}  // namespace

TEST(Prepare, ByteTokenizerRoundTrip) {
  const std::string dir = test::scratch_dir();
  const Corpus c = make_corpus(dir);
  PrepareOptions opt;
  opt.tokenizer = "byte";
  opt.out = dir + "/out.h5";
  opt.inputs = {c.dir};
  opt.val_fraction = 0.2;
  opt.progress = false;
  const PrepareStats st = prepare_dataset(opt);
  EXPECT_EQ(st.files, int64_t(c.files.size()));
  ByteTokenizer tok;
  check_prepared(opt.out, c, tok, opt.val_fraction, "uint8 (vocabulary 256)", 1);
  // byte tokens are the bytes: train tokens are exactly the train files, each followed by 0
  const std::vector<std::string> names = test::raw_attr_strings(opt.out, "source_files");
  const std::vector<int64_t> split = test::raw_attr_ints<int64_t>(opt.out, "source_split");
  std::vector<uint64_t> expected;
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < names.size(); ++i)
    if (split[i] == 0) {
      offsets.push_back(expected.size());
      for (unsigned char ch : c.files.at(names[i])) expected.push_back(ch);
      expected.push_back(0);
    }
  EXPECT_EQ(raw_split(opt.out, "train").tokens, expected);
  EXPECT_EQ(raw_split(opt.out, "train").offsets, offsets);
  EXPECT_EQ(st.tokens[0], int64_t(expected.size()));
}

TEST(Prepare, SplitIsSeededAndValFractionZeroKeepsEverything) {
  // 20 documents of 100 bytes: a fifth of the bytes is 4 documents, which ones depends on the seed
  const std::string dir = test::scratch_dir();
  fs::create_directories(dir + "/docs");
  for (int i = 0; i < 20; ++i) test::write_file(dir + "/docs/" + std::to_string(100 + i) + ".txt", std::string(100, char('a' + i)));
  auto splits = [&](uint64_t seed, double frac, const std::string& name) {
    PrepareOptions opt;
    opt.out = dir + "/" + name;
    opt.inputs = {dir + "/docs"};
    opt.seed = seed;
    opt.val_fraction = frac;
    opt.progress = false;
    prepare_dataset(opt);
    return test::raw_attr_ints<int64_t>(opt.out, "source_split");
  };
  const std::vector<int64_t> a = splits(5, 0.2, "a.h5");
  int n_val = 0;
  for (int64_t s : a) n_val += int(s);
  EXPECT_EQ(n_val, 4);
  EXPECT_EQ(splits(5, 0.2, "b.h5"), a);  // same seed, same split
  int differ = 0;
  for (uint64_t s = 6; s < 10; ++s) differ += splits(s, 0.2, "c.h5") != a;
  EXPECT_GE(differ, 3) << "the seed hardly changes which documents are held out";
  for (int64_t s : splits(5, 0.0, "d.h5")) EXPECT_EQ(s, 0);
  EXPECT_EQ(test::raw_dataset(dir + "/d.h5", "val/tokens").u64.size(), 0u);
  EXPECT_EQ(test::raw_dataset(dir + "/d.h5", "train/tokens").u64.size(), 20u * 101u);
}

TEST(Prepare, CommandLineToolWritesTheSameFile) {
  // gridtrain-prepare (the `gridtrain prepare` command) on explicit files: same tokens as the library call,
  // a summary line on stdout, and a non-zero exit with one error line for a missing input.
  const std::string dir = test::scratch_dir();
  const Corpus c = make_corpus(dir);
  const test::ChildResult r = test::run_child(
      {GT_PREPARE_BIN, "--tokenizer", "byte", "--out", dir + "/cli.h5", "--val-fraction=0.2", "--quiet", c.dir},
      dir + "/out.txt", dir + "/err.txt");
  ASSERT_EQ(r.exit_code, 0) << test::read_file(dir + "/err.txt");
  EXPECT_NE(test::read_file(dir + "/out.txt").find("prepare: " + dir + "/cli.h5"), std::string::npos);
  PrepareOptions opt;
  opt.out = dir + "/lib.h5";
  opt.inputs = {c.dir};
  opt.val_fraction = 0.2;
  opt.progress = false;
  prepare_dataset(opt);
  EXPECT_EQ(raw_split(dir + "/cli.h5", "train").tokens, raw_split(dir + "/lib.h5", "train").tokens);
  EXPECT_EQ(raw_split(dir + "/cli.h5", "val").tokens, raw_split(dir + "/lib.h5", "val").tokens);

  const test::ChildResult bad = test::run_child({GT_PREPARE_BIN, "--out", dir + "/x.h5", dir + "/missing.txt"},
                                                dir + "/out.txt", dir + "/err.txt");
  EXPECT_EQ(bad.exit_code, 1);
  const auto lines = test::lines_of(test::read_file(dir + "/err.txt"));
  ASSERT_EQ(lines.size(), 1u) << test::read_file(dir + "/err.txt");
  EXPECT_EQ(lines[0], "gridtrain: error: " + dir + "/missing.txt: no such file or directory");
  EXPECT_FALSE(fs::exists(dir + "/x.h5"));
}

TEST(Prepare, FailureLeavesNoOutputAndKeepsThePreviousFile) {
  const std::string dir = test::scratch_dir();
  test::write_file(dir + "/t.txt", "text\n");
  test::write_file(dir + "/empty.txt", "");
  PrepareOptions opt;
  opt.out = dir + "/out.h5";
  opt.inputs = {dir + "/t.txt"};
  opt.progress = false;
  prepare_dataset(opt);
  const std::string before = test::read_file(opt.out);
  auto expect_error = [&](PrepareOptions o, const std::string& what) {
    try {
      prepare_dataset(o);
      ADD_FAILURE() << "no error: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::read_file(opt.out), before) << what;
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  };
  PrepareOptions o = opt;
  o.inputs = {dir + "/nope"};
  expect_error(o, dir + "/nope: no such file or directory");
  o.inputs = {dir + "/empty.txt"};
  expect_error(o, "empty corpus");
  o = opt;
  o.tokenizer = "gpt2";
  o.bpe_dir = dir + "/no-bpe-here";
  expect_error(o, dir + "/no-bpe-here/encoder.json");
  o = opt;
  o.out = dir + "/no/such/dir/out.h5";
  expect_error(o, "does not exist");
}

TEST(Prepare, TokenDtypeIsTheSmallestUnsignedTypeForTheVocabulary) {
  // ids are 0 .. vocab-1: up to 256 fit uint8, up to 65536 uint16, beyond that uint32
  const std::string dir = test::scratch_dir();
  for (const auto& vb : std::vector<std::pair<int, size_t>>{{2, 1}, {256, 1}, {257, 2}, {65536, 2}, {65537, 4}, {50257, 2}, {1 << 20, 4}}) {
    const std::string path = dir + "/v" + std::to_string(vb.first) + ".h5";
    {
      DatasetWriter w(path, "test", vb.first, 0);
      const int32_t ids[3] = {1, vb.first - 1, vb.first / 2};
      w.begin_document(Split::Train);
      w.append(Split::Train, ids, 3);
      w.end_document(Split::Train);
      w.finish();
    }
    const test::RawDataset r = test::raw_dataset(path, "train/tokens");
    EXPECT_EQ(r.cls, H5T_INTEGER);
    EXPECT_FALSE(r.is_signed) << "vocab " << vb.first;
    EXPECT_EQ(r.bytes, vb.second) << "vocab " << vb.first;
    EXPECT_EQ(r.u64, (std::vector<uint64_t>{1, uint64_t(vb.first - 1), uint64_t(vb.first / 2), 0})) << vb.first;
    // the reader widens them back to the same ids
    DatasetFile f(path);
    std::vector<int32_t> back(4);
    f.read_tokens(Split::Train, 0, 4, back.data());
    EXPECT_EQ(back, (std::vector<int32_t>{1, vb.first - 1, vb.first / 2, 0})) << vb.first;
  }
}

TEST(Prepare, WriterRejectsIdsOutsideTheVocabulary) {
  const std::string dir = test::scratch_dir();
  DatasetWriter w(dir + "/w.h5", "test", 300, 0);
  w.begin_document(Split::Train);
  const int32_t bad[2] = {5, 300};
  EXPECT_THROW(w.append(Split::Train, bad, 2), Error);
  const int32_t neg[1] = {-1};
  EXPECT_THROW(w.append(Split::Train, neg, 1), Error);
}

TEST(Prepare, Gpt2TokenizerRoundTrip) {
  const char* env = std::getenv("GRIDTRAIN_BPE_DIR");
  const std::string bpe = env ? env : std::string(GT_SOURCE_DIR) + "/data/gpt2";
  if (!fs::exists(bpe + "/encoder.json")) {
    const char* allow = std::getenv("GRIDTRAIN_ALLOW_NO_BPE");
    if (allow && std::string(allow) == "1") GTEST_SKIP() << "no GPT-2 files in " << bpe;
    FAIL() << "GPT-2 BPE files not found in " << bpe
           << ": run scripts/fetch_gpt2_bpe.sh, or set GRIDTRAIN_ALLOW_NO_BPE=1 to skip";
  }
  const std::string dir = test::scratch_dir();
  Corpus c = make_corpus(dir);
  // one document over the 1 MiB read chunk, so prepare cuts it at safe points: its ids must equal the
  // encoding of the whole text at once
  std::string large;
  for (int i = 0; large.size() < (size_t(3) << 19); ++i)
    large += "Paragraph " + std::to_string(i) + ": the tokenizer's   streaming cut\tmust not change any id.\n";
  test::write_file(c.dir + "/large.txt", large);
  c.files[c.dir + "/large.txt"] = large;
  PrepareOptions opt;
  opt.tokenizer = "gpt2";
  opt.bpe_dir = bpe;
  opt.out = dir + "/gpt2.h5";
  opt.inputs = {c.dir};
  opt.val_fraction = 0.2;
  opt.progress = false;
  prepare_dataset(opt);
  GPT2Tokenizer tok(bpe);
  check_prepared(opt.out, c, tok, opt.val_fraction, "uint16 (vocabulary 50257)", 2);
  // find large.txt among the train documents
  const std::vector<std::string> names = test::raw_attr_strings(opt.out, "source_files");
  const std::vector<int64_t> split = test::raw_attr_ints<int64_t>(opt.out, "source_split");
  const SplitContent train = raw_split(opt.out, "train");
  const auto docs = documents_of(train, 50256);
  size_t d = 0;
  bool checked = false;
  for (size_t i = 0; i < names.size(); ++i) {
    if (split[i] != 0) continue;
    if (names[i] == c.dir + "/large.txt") {
      std::vector<int32_t> whole;
      tok.encode(large, whole);
      EXPECT_EQ(docs[d], whole) << "chunked preparation changed the ids of a large document";
      checked = true;
    }
    ++d;
  }
  EXPECT_TRUE(checked) << "large.txt is not a train document";
}
