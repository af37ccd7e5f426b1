// Output files (ein/Runtime/OutputFiles.h): links written through, streams
// written directly, read-only files refused, modes kept, all-or-none.
#include "ein/Runtime/OutputFiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ein::runtime;

namespace {

class OutputFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/ein-out-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir = buf.data();
  }
  void TearDown() override { removeTree(dir); }

  static void removeTree(const std::string &p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0)
      return;
    if (S_ISDIR(st.st_mode)) {
      ::chmod(p.c_str(), 0700);
      if (DIR *d = ::opendir(p.c_str())) {
        std::vector<std::string> names;
        while (dirent *e = ::readdir(d))
          if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
            names.push_back(e->d_name);
        ::closedir(d);
        for (const std::string &n : names)
          removeTree(p + "/" + n);
      }
      ::rmdir(p.c_str());
    } else {
      ::unlink(p.c_str());
    }
  }

  std::string path(const std::string &name) const { return dir + "/" + name; }

  void put(const std::string &name, const std::string &text,
           mode_t mode = 0644) {
    std::ofstream(path(name)) << text;
    ::chmod(path(name).c_str(), mode);
  }
  std::string slurp(const std::string &p) const {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  }
  std::vector<std::string> listDir(const std::string &d) const {
    std::vector<std::string> names;
    if (DIR *h = ::opendir(d.c_str())) {
      while (dirent *e = ::readdir(h))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
          names.push_back(e->d_name);
      ::closedir(h);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  mode_t modeOf(const std::string &p, bool follow = true) const {
    struct stat st;
    EXPECT_EQ(follow ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st), 0);
    return st.st_mode;
  }

  /// Plans `paths` and writes "content i" to output i.
  Status writeTexts(const std::vector<std::string> &paths) {
    Result<OutputPlan> plan = planOutputs(paths);
    if (!plan)
      return Status::failure(plan.error());
    return writeOutputs(*plan, [](size_t i, int fd) {
      std::string text = "content " + std::to_string(i);
      return writeAll(fd, reinterpret_cast<const uint8_t *>(text.data()),
                      text.size());
    });
  }

  /// Expects planning `paths` to fail with `needle` in the message.
  void expectPlanError(const std::vector<std::string> &paths,
                       const std::string &needle) {
    Result<OutputPlan> plan = planOutputs(paths);
    ASSERT_FALSE(plan.ok()) << paths.back();
    EXPECT_NE(plan.error().find(needle), std::string::npos)
        << "error lacks '" << needle << "': " << plan.error();
  }

  std::string dir;
};

TEST_F(OutputFilesTest, NewAndExistingFiles) {
  put("old.npy", "old");
  const mode_t savedUmask = ::umask(022);
  ASSERT_TRUE(writeTexts({path("new.npy"), path("old.npy")}).ok());
  EXPECT_EQ(slurp(path("new.npy")), "content 0");
  EXPECT_EQ(slurp(path("old.npy")), "content 1");
  // A created file gets 0666 & ~umask, as a shell redirection would.
  EXPECT_EQ(modeOf(path("new.npy")) & 07777, 0644u);
  ::umask(077);
  ASSERT_TRUE(writeTexts({path("private-new.npy")}).ok());
  EXPECT_EQ(modeOf(path("private-new.npy")) & 07777, 0600u);
  ::umask(savedUmask);
  // No temporaries or backups are left behind.
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"new.npy", "old.npy",
                                                    "private-new.npy"}));
}

TEST_F(OutputFilesTest, ExistingModeIsKept) {
  put("private.npy", "old", 0600);
  put("shared.npy", "old", 0664);
  ASSERT_TRUE(writeTexts({path("private.npy"), path("shared.npy")}).ok());
  EXPECT_EQ(modeOf(path("private.npy")) & 07777, 0600u);
  EXPECT_EQ(modeOf(path("shared.npy")) & 07777, 0664u);
  EXPECT_EQ(slurp(path("private.npy")), "content 0");
}

TEST_F(OutputFilesTest, ReadOnlyFileIsRefused) {
  // Refused even for root, who could write it: no write bit means "keep".
  put("ro.npy", "old", 0444);
  expectPlanError({path("ro.npy")},
                  "ro.npy: permission denied (the file is read-only, mode "
                  "0444)");
  EXPECT_EQ(slurp(path("ro.npy")), "old");
}

TEST_F(OutputFilesTest, UnrelatedPartialFilesAreUntouched) {
  // The old driver wrote PATH.einc-partial and clobbered whatever was there.
  put("s.npy.einc-partial", "mine");
  put(".s.npy.einc-", "mine too");
  ASSERT_TRUE(writeTexts({path("s.npy")}).ok());
  EXPECT_EQ(slurp(path("s.npy.einc-partial")), "mine");
  EXPECT_EQ(slurp(path(".s.npy.einc-")), "mine too");
  EXPECT_EQ(listDir(dir).size(), 3u);
}

TEST_F(OutputFilesTest, SymlinksAreWrittenThrough) {
  ASSERT_EQ(::mkdir(path("real").c_str(), 0755), 0);
  put("real/target.npy", "old", 0640);
  // A relative link to a relative link to the file.
  ASSERT_EQ(::symlink("real/target.npy", path("link1").c_str()), 0);
  ASSERT_EQ(::symlink("link1", path("link2").c_str()), 0);
  ASSERT_TRUE(writeTexts({path("link2")}).ok());
  EXPECT_TRUE(S_ISLNK(modeOf(path("link1"), false)));
  EXPECT_TRUE(S_ISLNK(modeOf(path("link2"), false)));
  EXPECT_EQ(slurp(path("real/target.npy")), "content 0");
  EXPECT_EQ(modeOf(path("real/target.npy")) & 07777, 0640u);
  // The temporary went beside the target, and is gone.
  EXPECT_EQ(listDir(path("real")), (std::vector<std::string>{"target.npy"}));

  // A dangling link creates its target; the link stays.
  ASSERT_EQ(::symlink("real/created.npy", path("dangling").c_str()), 0);
  ASSERT_TRUE(writeTexts({path("dangling")}).ok());
  EXPECT_TRUE(S_ISLNK(modeOf(path("dangling"), false)));
  EXPECT_EQ(slurp(path("real/created.npy")), "content 0");
  // ... unless the target's directory is missing.
  ASSERT_EQ(::symlink("nowhere/x.npy", path("lost").c_str()), 0);
  expectPlanError({path("lost")}, "no such directory '" + dir + "/nowhere'");

  // A link to a directory is a directory.
  ASSERT_EQ(::symlink("real", path("dirlink").c_str()), 0);
  expectPlanError({path("dirlink")}, "dirlink: is a directory");
  // A loop.
  ASSERT_EQ(::symlink("loop", path("loop").c_str()), 0);
  expectPlanError({path("loop")}, "too many levels of symbolic links");
}

TEST_F(OutputFilesTest, StreamsAreWrittenNotReplaced) {
  // /dev/null is a sink, and may take several outputs.
  ASSERT_TRUE(writeTexts({"/dev/null", "/dev/null"}).ok());
  EXPECT_TRUE(S_ISCHR(modeOf("/dev/null")));

  // A FIFO is written to and stays a FIFO.
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0644), 0);
  std::string received;
  std::thread reader([&] { received = slurp(path("fifo")); });
  Status s = writeTexts({path("fifo")});
  reader.join();
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(received, "content 0");
  EXPECT_TRUE(S_ISFIFO(modeOf(path("fifo"))));
  // Named twice, it is the same file.
  expectPlanError({path("fifo"), path("fifo")}, "the same file as");
}

TEST_F(OutputFilesTest, DevFullIsAWriteErrorAndNothingIsReplaced) {
  struct stat st;
  if (::stat("/dev/full", &st) != 0)
    GTEST_SKIP() << "no /dev/full";
  put("a.npy", "old");
  Status s = writeTexts({path("a.npy"), "/dev/full"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("/dev/full: write error: No space left on device"),
            std::string::npos)
      << s.error();
  EXPECT_TRUE(S_ISCHR(modeOf("/dev/full")));
  EXPECT_EQ(slurp(path("a.npy")), "old");
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"a.npy"}));
}

TEST_F(OutputFilesTest, BadPathsAreRefusedBeforeAnythingIsWritten) {
  put("a.npy", "old");
  ASSERT_EQ(::mkdir(path("adir").c_str(), 0755), 0);
  expectPlanError({path("a.npy"), path("adir")}, "adir: is a directory");
  expectPlanError({path("a.npy"), path("missing/x.npy")},
                  "x.npy: no such directory '" + dir + "/missing'");
  expectPlanError({path("a.npy/x.npy")},
                  "a.npy/x.npy: a component of the path is not a directory");
  expectPlanError({path("adir/")}, "is a directory");
  expectPlanError({""}, "empty output file name");
  EXPECT_EQ(slurp(path("a.npy")), "old");
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"a.npy", "adir"}));
}

TEST_F(OutputFilesTest, TheSameFileTwiceIsAnError) {
  put("s.npy", "old");
  ASSERT_EQ(::symlink("s.npy", path("alias").c_str()), 0);
  ASSERT_EQ(::link(path("s.npy").c_str(), path("hard").c_str()), 0);
  expectPlanError({path("s.npy"), dir + "/./s.npy"},
                  dir + "/./s.npy: the same file as " + path("s.npy"));
  expectPlanError({path("s.npy"), path("alias")},
                  "alias: the same file as " + path("s.npy") + " (both are '");
  expectPlanError({path("hard"), path("s.npy")}, "the same file as");
  // Files yet to be created compare by canonical path.
  ASSERT_EQ(::symlink("new.npy", path("to-new").c_str()), 0);
  expectPlanError({path("new.npy"), path("to-new")}, "the same file as");
  EXPECT_EQ(slurp(path("s.npy")), "old");
}

TEST_F(OutputFilesTest, AFailedRenameRestoresTheEarlierOutputs) {
  put("a.npy", "old a");
  Result<OutputPlan> plan =
      planOutputs({path("a.npy"), path("new.npy"), path("b.npy")});
  ASSERT_TRUE(plan.ok()) << plan.error();
  // After planning, b.npy becomes a directory: its rename fails after a.npy
  // and new.npy have been renamed into place.
  ASSERT_EQ(::mkdir(path("b.npy").c_str(), 0755), 0);
  Status s = writeOutputs(*plan, [](size_t, int fd) {
    return writeAll(fd, reinterpret_cast<const uint8_t *>("new"), 3);
  });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("b.npy: cannot rename the temporary file into "
                           "place"),
            std::string::npos)
      << s.error();
  EXPECT_EQ(s.error().find("not restored"), std::string::npos) << s.error();
  EXPECT_EQ(slurp(path("a.npy")), "old a");
  EXPECT_EQ(listDir(dir), (std::vector<std::string>{"a.npy", "b.npy"}));
}

} // namespace
