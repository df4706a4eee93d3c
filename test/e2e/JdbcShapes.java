// Runs BI-generated SQL shapes through the PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java),
// the way Metabase and other JVM BI tools send them. Driven by test_bi_shapes.py.
//
// Usage: java -cp <classes>:/usr/share/java/postgresql.jar JdbcShapes <jdbc-url> <shapes-file> <tag>
//
// The shapes file holds one shape per line: "<name>\t<sql>". Output, one line per item, tab-separated:
//   shape  <name>  ok     <rows>  <type,type,...>           every column's type name
//   shape  <name>  error  <sqlstate>  <message>
//   meta   tables  <n>        DatabaseMetaData.getTables(null, "public", "people", null)
//   meta   columns <n>  <name:type,...>   DatabaseMetaData.getColumns(null, "public", "people", "%")
//   param  <ok|sqlstate> <answers...>   a PreparedStatement with ? parameters executed 8 times
//   prepared  <ok|error>  <answers...>   one parameterless PreparedStatement executed 6 times
//                                       (past the driver's prepareThreshold of 5: a named server-side statement)
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class JdbcShapes {
    private static String clean(String s) {
        return s == null ? "" : s.replace('\t', ' ').replace('\n', ' ');
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: JdbcShapes <jdbc-url> <shapes-file> <tag>");
            System.exit(2);
        }
        List<String> lines = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        String tag = args[2];
        try (Connection conn = DriverManager.getConnection(args[0])) {
            conn.setAutoCommit(true);
            for (String line : lines) {
                if (line.isEmpty())
                    continue;
                int tab = line.indexOf('\t');
                String name = line.substring(0, tab);
                String sql = line.substring(tab + 1);
                try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
                    ResultSetMetaData md = rs.getMetaData();
                    StringBuilder types = new StringBuilder();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        if (i > 1)
                            types.append(',');
                        types.append(md.getColumnTypeName(i));
                    }
                    int rows = 0;
                    boolean nullAggregate = false;
                    while (rs.next()) {
                        rows++;
                        // the last column of every shape is an aggregate: never NULL
                        rs.getObject(md.getColumnCount());
                        nullAggregate |= rs.wasNull();
                    }
                    System.out.println("shape\t" + name + "\t" + (nullAggregate ? "null-aggregate" : "ok") + "\t" + rows
                                       + "\t" + types);
                } catch (SQLException e) {
                    System.out.println("shape\t" + name + "\terror\t" + e.getSQLState() + "\t" + clean(e.getMessage()));
                }
            }

            DatabaseMetaData meta = conn.getMetaData();
            int tables = 0;
            try (ResultSet rs = meta.getTables(null, "public", "people", null)) {
                while (rs.next())
                    tables++;
            }
            System.out.println("meta\ttables\t" + tables);
            List<String> cols = new ArrayList<>();
            try (ResultSet rs = meta.getColumns(null, "public", "people", "%")) {
                while (rs.next())
                    cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME"));
            }
            System.out.println("meta\tcolumns\t" + cols.size() + "\t" + String.join(",", cols));

            // bound parameters (setInt, setString), 8 executions: past prepareThreshold (5) the driver
            // switches to a named server-side statement; every execution is analysed with its values
            String ptag = new StringBuilder(tag).reverse().toString();
            try (PreparedStatement ps = conn.prepareStatement(
                     "/* " + ptag + " */ SELECT count(*) FROM people WHERE age > ? AND sex = ?")) {
                StringBuilder pa = new StringBuilder();
                for (int i = 0; i < 8; i++) {
                    ps.setInt(1, 20 + 5 * i);
                    ps.setString(2, i % 2 == 0 ? "F" : "M");
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        pa.append('\t').append(rs.getLong(1));
                    }
                }
                System.out.println("param\tok" + pa);
            } catch (SQLException e) {
                System.out.println("param\t" + e.getSQLState() + "\t" + clean(e.getMessage()));
            }

            StringBuilder answers = new StringBuilder();
            String status = "ok";
            try (PreparedStatement ps = conn.prepareStatement(
                     "/* " + tag + " */ SELECT count(*) AS \"count\" FROM \"public\".\"people\" WHERE \"public\".\"people\".\"age\" >= 65")) {
                for (int i = 0; i < 6; i++) {
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        answers.append('\t').append(rs.getLong(1));
                    }
                }
            } catch (SQLException e) {
                status = "error\t" + e.getSQLState() + "\t" + clean(e.getMessage());
            }
            System.out.println("prepared\t" + status + answers);
        }
    }
}
